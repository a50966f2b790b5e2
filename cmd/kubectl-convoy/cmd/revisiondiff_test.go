package cmd

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/diffreport"
)

const (
	shopReleases = "/apis/convoy.kumodo.io/v1alpha1/namespaces/shop/releases"
	allReleases  = "/apis/convoy.kumodo.io/v1alpha1/releases"
	shopSubres   = "/apis/subresources.convoy.kumodo.io/v1alpha1/namespaces/shop/releases/"
)

// releaseList is a ReleaseList of releases, each a name and its source.
func releaseList(releases ...map[string]any) answer {
	items := make([]any, 0, len(releases))
	for _, r := range releases {
		items = append(items, r)
	}
	return jsonAnswer(http.StatusOK, map[string]any{"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "ReleaseList", "metadata": map[string]any{}, "items": items})
}

func gitRelease(name, url, cluster string) map[string]any {
	spec := map[string]any{"source": map[string]any{"git": map[string]any{"url": url, "ref": map[string]any{"branch": "main"}}}}
	if cluster != "" {
		spec["cluster"] = map[string]any{"name": cluster}
	}
	return map[string]any{"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "Release", "metadata": map[string]any{"name": name, "namespace": "shop"}, "spec": spec}
}

func configMapRelease(name string) map[string]any {
	return map[string]any{"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "Release", "metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec": map[string]any{"source": map[string]any{"configMap": map[string]any{"name": name}}}}
}

// revisionDiff is the diff of release name at a revision: Drifted (a
// ConfigMap's data.color) or InSync, with renderRef ref.
func revisionDiff(name, ref string, drifted bool) answer {
	d := subresourcesv1alpha1.ReleaseDiff{
		TypeMeta:   metav1.TypeMeta{Kind: "ReleaseDiff", APIVersion: subresourcesv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		RenderRef:  ref, RenderSource: subresourcesv1alpha1.RenderSourceRevision, Result: subresourcesv1alpha1.DiffInSync,
		ResolvedSource: &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/org/apps", Ref: "refs/heads/pr", Commit: strings.Repeat("a", 40)},
		Objects:        []subresourcesv1alpha1.ObjectDiff{{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: name, Status: subresourcesv1alpha1.ObjectInSync}},
	}
	if drifted {
		d.Result = subresourcesv1alpha1.DiffDrifted
		d.Objects[0].Status = subresourcesv1alpha1.ObjectModified
		d.Objects[0].Changes = []subresourcesv1alpha1.FieldChange{{Path: "data.color", Op: subresourcesv1alpha1.ChangeReplace, Live: raw(`"blue"`), Desired: raw(`"green"`)}}
	}
	return jsonAnswer(http.StatusOK, d)
}

func previewOf(name, ref string) answer {
	return jsonAnswer(http.StatusOK, map[string]any{"kind": "ReleasePreview", "apiVersion": "subresources.convoy.kumodo.io/v1alpha1",
		"metadata": map[string]any{"name": name, "namespace": "shop"}, "renderRef": ref, "renderSource": "Fresh"})
}

var revisionNotFound = statusAnswer(&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
	Details: &metav1.StatusDetails{Group: subresourcesv1alpha1.GroupName, Kind: "releases", Name: "api"},
	Message: "release shop/api: no revision pr of its source: no branch or tag pr"}})

// shop are three Releases on one repository, spelled three ways, and one
// of a ConfigMap: web changes at the revision, api and worker do not.
func shop() map[string]answer {
	return map[string]answer{
		shopReleases: releaseList(
			gitRelease("web", "https://git.example/org/apps.git", "eu-1"),
			gitRelease("api", "ssh://git@git.example/org/apps", ""),
			gitRelease("worker", "https://git.example/org/other", ""),
			configMapRelease("legacy"),
		),
		shopSubres + "web/diff":    revisionDiff("web", "2222222222222222", true),
		shopSubres + "api/diff":    revisionDiff("api", "1111111111111111", false),
		shopSubres + "worker/diff": revisionDiff("worker", "3333333333333333", false),
		shopSubres + "web/preview": previewOf("web", "0000000000000000"),
		shopSubres + "api/preview": previewOf("api", "1111111111111111"),
		apiServicePath:             available,
	}
}

func TestRevisionDiff(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		answers func(map[string]answer)
		code    int
		stdout  []string
		absent  []string
		stderr  string
		diffs   []string // the Releases whose diff was asked for
	}{{
		name: "table",
		code: 1,
		stdout: []string{
			"NAMESPACE   NAME     CLUSTER      RESULT      CHANGED   ADDED   PRUNED   FIELDS   MESSAGE\n" +
				"shop        api      in-cluster   Unchanged   0         0       0        0        -\n" +
				"shop        legacy   in-cluster   Skipped     -         -       -        -        NoRevisions: a ConfigMap source has no revisions\n" +
				"shop        web      eu-1         Changed     1         0       0        1        -\n" +
				"shop        worker   in-cluster   Unchanged   0         0       0        0        -\n" +
				"Revision pr: 1 changed, 2 unchanged, 0 errors, 1 skipped.\n\n" +
				"Release shop/web, render 2222222222222222 (Revision): Drifted\n" +
				"Revision: https://git.example/org/apps refs/heads/pr (commit aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)\n" +
				"Modified   ConfigMap   shop/web\n\n--- live   v1 ConfigMap shop/web\n+++ desired\n@@ data.color @@",
		},
		absent: []string{"Release shop/api,"},
		diffs:  []string{"api", "web", "worker"},
	}, {
		name:   "by source URL, however spelled",
		args:   []string{"--source-url", "git@GIT.example:org/apps/"},
		code:   1,
		stdout: []string{"shop        api    in-cluster   Unchanged", "shop        web    eu-1         Changed", "Revision pr: 1 changed, 1 unchanged, 0 errors, 0 skipped.\n"},
		absent: []string{"worker", "legacy"},
		diffs:  []string{"api", "web"},
	}, {
		name:   "changed only",
		args:   []string{"--source-url", "https://git.example/org/apps", "--changed-only"},
		code:   1,
		stdout: []string{"shop        web    eu-1      Changed", "1 Release renders the same at the revision as now: not listed (--changed-only).\n"},
		absent: []string{"shop        api"},
		diffs:  []string{"api", "web"},
	}, {
		name:    "nothing changes",
		args:    []string{"--source-url", "https://git.example/org/other"},
		code:    0,
		stdout:  []string{"Revision pr: 0 changed, 1 unchanged, 0 errors, 0 skipped.\n"},
		diffs:   []string{"worker"},
		answers: func(map[string]answer) {},
	}, {
		name:    "an error is its row's, not the others'",
		answers: func(a map[string]answer) { a[shopSubres+"api/diff"] = revisionNotFound },
		code:    2,
		stdout: []string{
			"shop        api      in-cluster   Error       -         -       -        -        NotFound: release shop/api: no revision pr of its source: no branch or tag pr\n",
			"shop        web      eu-1         Changed     1",
			"Revision pr: 1 changed, 1 unchanged, 1 error, 1 skipped.\n",
		},
		stderr: "error: 1 of 4 releases could not be compared at revision pr: see their rows\n",
		diffs:  []string{"api", "web", "worker"},
	}, {
		name:   "json",
		args:   []string{"-o", "json", "--source-url", "https://git.example/org/apps"},
		code:   1,
		stdout: []string{"{\n    \"revision\": \"pr\",\n    \"sourceURL\": \"https://git.example/org/apps\",\n", `"result": "Changed"`, `"kind": "ReleaseDiff"`},
		diffs:  []string{"api", "web"},
	}, {
		name: "markdown",
		args: []string{"-o", "markdown", "--source-url", "https://git.example/org/apps"},
		code: 1,
		stdout: []string{"### kubectl convoy diff --revision `pr`\n\n1 changed, 1 unchanged, 0 errors, 0 skipped: the Releases of `https://git.example/org/apps`.\n",
			"| shop/web | eu-1 | **Changed** | 1 | 0 | 0 | 1 |\n",
			"<details><summary>shop/web: 1 changed, 0 added, 0 pruned, 1 field</summary>\n\n```diff\nRelease shop/web, render 2222222222222222 (Revision): Drifted\n"},
		diffs: []string{"api", "web"},
	}, {
		name:    "no release matches",
		args:    []string{"--source-url", "https://git.example/org/none"},
		code:    0,
		stdout:  []string{"Revision pr: 0 changed, 0 unchanged, 0 errors, 0 skipped.\n"},
		stderr:  "No releases to compare in namespace shop with the source https://git.example/org/none.\n",
		answers: func(map[string]answer) {},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := shop()
			if tt.answers != nil {
				tt.answers(answers)
			}
			server := newFakeServer(t, answers)
			r := runPlugin(t, server.URL, append([]string{"diff", "--revision", "pr", "-n", "shop"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			for _, s := range tt.stdout {
				assert.Contains(t, r.stdout, s)
			}
			for _, s := range tt.absent {
				assert.NotContains(t, r.stdout, s)
			}
			assert.Equal(t, tt.stderr, r.stderr)
			var diffs []string
			for _, req := range server.recorded() {
				name, isDiff := strings.CutSuffix(strings.TrimPrefix(req.path, shopSubres), "/diff")
				if isDiff && strings.HasPrefix(req.path, shopSubres) {
					diffs = append(diffs, name)
					assert.Equal(t, "revision=pr", req.query)
				}
				if strings.HasSuffix(req.path, "/preview") {
					assert.Empty(t, req.query, "the render now")
					assert.Contains(t, tt.args, "--changed-only")
				}
			}
			assert.ElementsMatch(t, tt.diffs, diffs)
		})
	}
}

func TestRevisionDiffJSON(t *testing.T) {
	server := newFakeServer(t, shop())
	r := runPlugin(t, server.URL, "diff", "--revision", "pr", "-n", "shop", "-o", "json")
	require.Equal(t, 1, r.code, r.stderr)
	var report diffreport.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	assert.Equal(t, diffreport.Summary{Releases: 4, Changed: 1, Unchanged: 2, Skipped: 1}, report.Summary)
	require.Len(t, report.Releases, 4)
	web := report.Releases[2]
	assert.Equal(t, diffreport.Release{Namespace: "shop", Name: "web", Cluster: "eu-1"}, web.Release)
	assert.Equal(t, diffreport.Counts{Changed: 1, Fields: 1}, web.Counts)
	require.NotNil(t, web.Diff)
	assert.Equal(t, "2222222222222222", web.Diff.RenderRef)
}

func TestRevisionDiffAllNamespaces(t *testing.T) {
	answers := shop()
	answers[allReleases] = answers[shopReleases]
	delete(answers, shopReleases)
	server := newFakeServer(t, answers)
	r := runPlugin(t, server.URL, "diff", "--revision", "pr", "-A", "--source-url", "https://git.example/org/other")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "shop        worker   in-cluster   Unchanged")
}

// Never more diffs at a time than --concurrency.
func TestRevisionDiffConcurrency(t *testing.T) {
	answers := map[string]answer{}
	var releases []map[string]any
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		releases = append(releases, gitRelease(name, "https://git.example/org/apps", ""))
		answers[shopSubres+name+"/diff"] = revisionDiff(name, "1111111111111111", false)
	}
	answers[shopReleases] = releaseList(releases...)
	server := newFakeServer(t, answers)
	var now, most atomic.Int32
	server.hook = func(r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/diff") {
			return
		}
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		now.Add(-1)
	}
	r := runPlugin(t, server.URL, "diff", "--revision", "pr", "-n", "shop", "--concurrency", "2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, int32(2), most.Load())
}

func TestRevisionDiffFlags(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"diff", "-n", "shop"}, "error: --revision is required: the revision to compare each Release at\n"},
		{[]string{"diff", "--revision", "pr", "-o", "yaml"}, `error: unknown output format "yaml": use one of table, markdown, json` + "\n"},
		{[]string{"diff", "--revision", "pr", "--concurrency", "0"}, "error: --concurrency must be at least 1, not 0\n"},
		{[]string{"diff", "--revision", "pr", "-o", "markdown", "--max-report-bytes", "100"}, "error: --max-report-bytes must be at least 1024, not 100\n"},
		{[]string{"diff", "--revision", "pr", "--source-url", "not a url"}, `error: --source-url: "not a url" is not the URL of a Git, OCI or Helm repository`},
		{[]string{"diff", "--revision", "pr", "--color", "sometimes"}, `error: --color must be auto, always or never, not "sometimes"` + "\n"},
		{[]string{"diff", "--revision", "pr", "web"}, "error: kubectl convoy diff takes no release name, got web: select the Releases with -n, -A, -l and --source-url, or compare one with kubectl convoy release diff NAME --revision REV\n"},
		{[]string{"diff", "--revison", "pr"}, "error: unknown flag: --revison\n"},
		{[]string{"release", "diff", "web", "-n", "shop", "--render", "0123456789abcdef", "--revision", "pr"}, "error: --render and --revision cannot be used together: a stored render has its own revision\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			server := newFakeServer(t, map[string]answer{})
			r := runPlugin(t, server.URL, tt.args...)
			assert.Equal(t, 2, r.code)
			assert.Empty(t, r.stdout)
			if strings.HasSuffix(tt.stderr, "\n") {
				assert.Equal(t, tt.stderr, r.stderr)
			} else {
				assert.True(t, strings.HasPrefix(r.stderr, tt.stderr), "stderr %q", r.stderr)
			}
			assert.Empty(t, server.recorded(), "nothing asked")
		})
	}
}

// release diff and preview send --revision as ?revision=.
func TestReleaseRevision(t *testing.T) {
	server := newFakeServer(t, map[string]answer{
		releasePath + "diff":    revisionDiff("web", "2222222222222222", true),
		releasePath + "preview": previewOf("web", "2222222222222222"),
	})
	r := runPlugin(t, server.URL, "release", "diff", "web", "-n", "shop", "--revision", "refs/pull/7/head")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Release shop/web, render 2222222222222222 (Revision): Drifted\nRevision: https://git.example/org/apps refs/heads/pr (commit ")
	r = runPlugin(t, server.URL, "release", "preview", "web", "-n", "shop", "--revision", "v1.4.0")
	assert.Equal(t, 0, r.code, r.stderr)
	r = runPlugin(t, server.URL, "release", "preview", "web", "-n", "shop", "--revision", "v1.4.0", "--render", "0123456789abcdef")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "error: --render and --revision cannot be used together: a stored render has its own revision\n", r.stderr)
	requests := server.recorded()
	require.Len(t, requests, 2)
	assert.Equal(t, "revision=refs%2Fpull%2F7%2Fhead", requests[0].query)
	assert.Equal(t, "revision=v1.4.0", requests[1].query)
}
