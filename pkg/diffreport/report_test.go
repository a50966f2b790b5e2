package diffreport

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/sourceurl"
)

var web = Release{Namespace: "shop", Name: "web", Cluster: InCluster}

// diffOf is a diff with result, a Modified object of fields changes, a
// Missing object when added and an extra object when pruned.
func diffOf(result subresourcesv1alpha1.DiffResult, ref string, fields int, added, pruned bool) *subresourcesv1alpha1.ReleaseDiff {
	d := &subresourcesv1alpha1.ReleaseDiff{RenderRef: ref, Result: result}
	d.Objects = append(d.Objects, subresourcesv1alpha1.ObjectDiff{Kind: "ConfigMap", Name: "same", Status: subresourcesv1alpha1.ObjectInSync})
	if fields > 0 {
		o := subresourcesv1alpha1.ObjectDiff{Kind: "ConfigMap", Name: "settings", Status: subresourcesv1alpha1.ObjectModified}
		for range fields {
			o.Changes = append(o.Changes, subresourcesv1alpha1.FieldChange{Path: "data.color", Op: subresourcesv1alpha1.ChangeReplace})
		}
		d.Objects = append(d.Objects, o)
	}
	if added {
		d.Objects = append(d.Objects, subresourcesv1alpha1.ObjectDiff{Kind: "Service", Name: "web", Status: subresourcesv1alpha1.ObjectMissing})
	}
	if pruned {
		d.ExtraObjects = append(d.ExtraObjects, subresourcesv1alpha1.ExtraObject{ObjectKey: convoyv1alpha1.ObjectKey{Kind: "Secret", Name: "old"}})
	}
	return d
}

func TestCountsOf(t *testing.T) {
	assert.Equal(t, Counts{}, CountsOf(diffOf(subresourcesv1alpha1.DiffInSync, "a", 0, false, false)))
	assert.Equal(t, Counts{Changed: 1, Added: 1, Pruned: 1, Fields: 3}, CountsOf(diffOf(subresourcesv1alpha1.DiffDrifted, "a", 3, true, true)))
}

func TestClassify(t *testing.T) {
	unprocessable := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: "RenderFailed", Message: "rendering release shop/web failed"}}
	tests := []struct {
		name    string
		diff    *subresourcesv1alpha1.ReleaseDiff
		current *Current
		result  Result
		reason  string
		message string
	}{
		{name: "in sync", diff: diffOf(subresourcesv1alpha1.DiffInSync, "a", 0, false, false), result: Unchanged},
		{name: "drifted", diff: diffOf(subresourcesv1alpha1.DiffDrifted, "a", 1, false, false), result: Changed},
		{name: "only pruned", diff: diffOf(subresourcesv1alpha1.DiffInSync, "a", 0, false, true), result: Unchanged},
		{name: "undetermined",
			diff:   &subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffUndetermined, Reason: "ClusterNotFound", Message: `cluster "far" not found`},
			result: Failed, reason: "ClusterNotFound", message: `cluster "far" not found`},
		{name: "unknown result", diff: &subresourcesv1alpha1.ReleaseDiff{Result: "Maybe"}, result: Failed, reason: ReasonRequestFailed, message: `unknown result "Maybe"`},
		{name: "changed only, same render, drifted", diff: diffOf(subresourcesv1alpha1.DiffDrifted, "a", 1, false, false), current: &Current{RenderRef: "a"},
			result: Unchanged, reason: ReasonSameRender, message: "renders what it renders now, a"},
		{name: "changed only, another render", diff: diffOf(subresourcesv1alpha1.DiffDrifted, "b", 1, false, false), current: &Current{RenderRef: "a"}, result: Changed},
		{name: "changed only, another render in sync", diff: diffOf(subresourcesv1alpha1.DiffInSync, "b", 0, false, false), current: &Current{RenderRef: "a"}, result: Changed},
		{name: "changed only, the render now fails", diff: diffOf(subresourcesv1alpha1.DiffDrifted, "b", 1, false, false), current: &Current{Err: unprocessable},
			result: Changed, reason: ReasonRenderFailsNow, message: "its render now fails: rendering release shop/web failed"},
		{name: "changed only, the render now unavailable", diff: diffOf(subresourcesv1alpha1.DiffDrifted, "b", 1, false, false), current: &Current{Err: apierrors.NewServiceUnavailable("later")},
			result: Failed, reason: "ServiceUnavailable", message: "reading its render now: later"},
		{name: "changed only, undetermined", diff: &subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffUndetermined, Reason: "RenderFailed", Message: "bad"},
			current: &Current{RenderRef: "a"}, result: Failed, reason: "RenderFailed", message: "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Classify(web, tt.diff, tt.current)
			assert.Equal(t, tt.result, e.Result)
			assert.Equal(t, tt.reason, e.Reason)
			if tt.message == "" {
				assert.Empty(t, e.Message)
			} else {
				assert.Contains(t, e.Message, tt.message)
			}
			assert.Same(t, tt.diff, e.Diff)
			assert.Equal(t, web, e.Release)
		})
	}
}

func TestFailure(t *testing.T) {
	notFound := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: "release shop/web: no revision nope of its source: no such ref"}}
	tests := []struct {
		name   string
		err    error
		reason string
	}{
		{"the server's status", notFound, "NotFound"},
		{"wrapped", errors.Join(errors.New("asking"), notFound), "NotFound"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Group: subresourcesv1alpha1.GroupName, Resource: "releases/diff"}, "web", errors.New("no")), "Forbidden"},
		{"no status", errors.New("connection refused"), ReasonRequestFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Failure(web, tt.err)
			assert.Equal(t, Failed, e.Result)
			assert.Equal(t, tt.reason, e.Reason)
			assert.Equal(t, tt.err.Error(), e.Message)
			assert.Nil(t, e.Diff)
		})
	}
}

func TestReportSummaryAndExitCode(t *testing.T) {
	entry := func(name string, result Result) Entry {
		return Entry{Release: Release{Namespace: "ns", Name: name, Cluster: InCluster}, Result: result}
	}
	tests := []struct {
		name    string
		entries []Entry
		summary Summary
		code    int
		line    string
	}{
		{name: "none", summary: Summary{}, code: ExitNoChange, line: "0 changed, 0 unchanged, 0 errors, 0 skipped"},
		{name: "unchanged and skipped", entries: []Entry{entry("a", Unchanged), entry("b", Skipped)},
			summary: Summary{Releases: 2, Unchanged: 1, Skipped: 1}, code: ExitNoChange, line: "0 changed, 1 unchanged, 0 errors, 1 skipped"},
		{name: "changed", entries: []Entry{entry("a", Unchanged), entry("b", Changed)},
			summary: Summary{Releases: 2, Changed: 1, Unchanged: 1}, code: ExitChanged},
		{name: "an error hides no change but wins the exit code", entries: []Entry{entry("a", Failed), entry("b", Changed), entry("c", Changed)},
			summary: Summary{Releases: 3, Changed: 2, Errors: 1}, code: ExitError, line: "2 changed, 0 unchanged, 1 error, 0 skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New("main", "", false, tt.entries)
			assert.Equal(t, tt.summary, r.Summary)
			assert.Equal(t, tt.code, r.ExitCode())
			if tt.line != "" {
				assert.Equal(t, tt.line, r.SummaryLine())
			}
		})
	}
}

func TestRows(t *testing.T) {
	entries := []Entry{
		Classify(Release{Namespace: "shop", Name: "web", Cluster: "eu-1"}, diffOf(subresourcesv1alpha1.DiffDrifted, "b", 2, true, true), &Current{RenderRef: "a"}),
		Classify(Release{Namespace: "shop", Name: "api", Cluster: InCluster}, diffOf(subresourcesv1alpha1.DiffDrifted, "a", 1, false, false), &Current{RenderRef: "a"}),
		Failure(Release{Namespace: "ads", Name: "web", Cluster: InCluster}, errors.New("connection refused")),
		Skip(Release{Namespace: "ads", Name: "cm", Cluster: InCluster}),
	}
	all := New("pr-7", "", false, entries)
	assert.Equal(t, [][]string{
		{"ads", "cm", InCluster, "Skipped", "", "", "", "", "NoRevisions: a ConfigMap source has no revisions"},
		{"ads", "web", InCluster, "Error", "", "", "", "", "RequestFailed: connection refused"},
		{"shop", "api", InCluster, "Unchanged", "1", "0", "0", "1", "SameRender: the revision renders what it renders now, a"},
		{"shop", "web", "eu-1", "Changed", "1", "1", "1", "2", ""},
	}, all.Rows())
	assert.Len(t, Header, len(all.Rows()[0]))
	assert.Empty(t, all.HiddenLine())

	changedOnly := New("pr-7", "", true, entries)
	require.Len(t, changedOnly.Rows(), 3, "the unchanged Release is not listed")
	assert.Equal(t, "1 Release renders the same at the revision as now: not listed (--changed-only).", changedOnly.HiddenLine())
	assert.Len(t, changedOnly.Releases, 4, "but stays in the report")
}

func TestSelect(t *testing.T) {
	release := func(name string, src convoyv1alpha1.ReleaseSource, cluster string) convoyv1alpha1.Release {
		r := convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: convoyv1alpha1.ReleaseSpec{Source: src}}
		if cluster != "" {
			r.Spec.Cluster = &convoyv1alpha1.ClusterReference{Name: cluster}
		}
		return r
	}
	git := func(url string) convoyv1alpha1.ReleaseSource {
		return convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: url}}
	}
	releases := []convoyv1alpha1.Release{
		release("a", git("https://git.example/org/apps.git"), ""),
		release("b", git("ssh://git@git.example/org/other"), "eu-1"),
		release("c", convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://reg.example/charts/web"}}, ""),
		release("d", convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "d"}}, ""),
	}
	names := func(rs []convoyv1alpha1.Release) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}

	compare, skipped := Select(releases, nil)
	assert.Equal(t, []string{"a", "b", "c"}, names(compare))
	require.Len(t, skipped, 1)
	assert.Equal(t, Skip(Release{Namespace: "shop", Name: "d", Cluster: InCluster}), skipped[0])

	m, err := sourceurl.NewMatcher("git@git.example:org/apps")
	require.NoError(t, err)
	compare, skipped = Select(releases, m)
	assert.Equal(t, []string{"a"}, names(compare))
	assert.Empty(t, skipped, "a source of another repository is not selected, not skipped")

	assert.Equal(t, Release{Namespace: "shop", Name: "b", Cluster: "eu-1"}, ReleaseOf(&releases[1]))
}

func TestJSON(t *testing.T) {
	e := Classify(web, diffOf(subresourcesv1alpha1.DiffDrifted, "b", 1, false, false), nil)
	e.Text = "the printed diff"
	r := New("refs/pull/7/head", "https://git.example/org/apps", false, []Entry{e, Skip(Release{Namespace: "shop", Name: "cm", Cluster: InCluster})})
	b, err := r.JSON()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "the printed diff")
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "refs/pull/7/head", got["revision"])
	assert.Equal(t, "https://git.example/org/apps", got["sourceURL"])
	assert.Equal(t, map[string]any{"releases": 2.0, "changed": 1.0, "unchanged": 0.0, "errors": 0.0, "skipped": 1.0}, got["summary"])
	releases := got["releases"].([]any)
	require.Len(t, releases, 2)
	first := releases[0].(map[string]any)
	assert.Equal(t, map[string]any{"namespace": "shop", "name": "cm", "cluster": InCluster}, first["release"])
	assert.Equal(t, "Skipped", first["result"])
	assert.NotContains(t, first, "diff")
	second := releases[1].(map[string]any)
	assert.Equal(t, "Changed", second["result"])
	assert.Equal(t, map[string]any{"changed": 1.0, "added": 0.0, "pruned": 0.0, "fields": 1.0}, second["counts"])
	assert.Equal(t, "Drifted", second["diff"].(map[string]any)["result"])

	empty, err := New("main", "", false, nil).JSON()
	require.NoError(t, err)
	assert.Contains(t, string(empty), `"releases": []`, "a list, never null")
}
