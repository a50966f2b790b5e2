//go:build unix

package e2e

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/diffreport"
)

// previewApps is how many apps the monorepo of TestPluginDiffRevision
// holds, and previewKeys how many keys each app's ConfigMap has.
const (
	previewApps = 10
	previewKeys = 40
)

// appsTree is a monorepo of previewApps apps, apps/app-N/cm.yaml each, a
// ConfigMap app-N whose keys are all color, but changed's all other.
func appsTree(color string, changed int, other string) gitserver.Tree {
	files := map[string]string{}
	for i := range previewApps {
		c := color
		if i == changed {
			c = other
		}
		var data strings.Builder
		for k := range previewKeys {
			fmt.Fprintf(&data, "  k%02d: %s\n", k, c)
		}
		files[fmt.Sprintf("apps/app-%d/cm.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-%d}\ndata:\n%s", i, data.String())
	}
	return gitserver.Tree{Files: files}
}

// kubectl convoy diff --revision on a monorepo: ten Releases of one
// repository, each its own path, and a branch whose commit changes one
// path. Selected by the repository's URL spelled another way, the plugin
// lists one Release Changed (every field of that path) and nine Unchanged,
// and exits 1; the server listed the refs once and fetched the commit
// once for the ten. --changed-only agrees by renderRef; the Markdown
// report cut at a limit says what it cut and closes what it opened.
func TestPluginDiffRevision(t *testing.T) {
	// Not parallel: it counts the requests its repository gets while the
	// plugin runs, and the loops must be quiet then.
	ns := newNamespace(t)
	standIn := newStandIn(t)
	g := startGitRepo(t, gitserver.Options{})
	g.commit(t, "main", appsTree("blue", -1, ""))
	for i := range previewApps {
		name := fmt.Sprintf("app-%d", i)
		// Hourly: after its first passes no loop resolves the source again
		// while the plugin runs.
		newSourceRelease(t, ns, name, gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/"+name), hourly)
		standIn.apply(ns, name)
	}
	// A Release of another source, which --source-url leaves out.
	newDriftRelease(t, ns, "other", webManifests("blue", "1.0"), hourly)
	for i := range previewApps {
		waitInSync(t, ns, fmt.Sprintf("app-%d", i), metav1.ConditionTrue, "InSync")
	}
	const changed = 3
	pr := g.commit(t, "pr", appsTree("blue", changed, "green"))

	u, err := url.Parse(g.url)
	require.NoError(t, err)
	spelled := "HTTP://" + u.Host + strings.TrimSuffix(u.Path, ".git") + "/" // http://127.0.0.1:PORT/apps.git
	args := []string{"diff", "--revision", "pr", "-n", ns, "--source-url", spelled}

	buildPlugin(t) // before the window
	// Past --source-resolve-max-age (2s): no listing of before is reused.
	time.Sleep(3 * time.Second)
	g.server.Reset()
	start := time.Now()
	r := kubectlConvoy(t, "", append(args, "-o", "json")...)
	took := time.Since(start)
	// go-git speaks protocol v0: a fetch begins with a ref advertisement of
	// its own (GET info/refs, which Listings counts) before its POST.
	listings, fetches := g.server.Listings()-g.server.Fetches(), g.server.Fetches()
	t.Logf("kubectl convoy %s -o json: exit %d in %s; the repository served %d ref listings and %d fetches", strings.Join(args, " "), r.code, took, listings, fetches)
	require.Equal(t, 1, r.code, r)
	assert.Equal(t, 1, listings, "one ref listing for the ten Releases: %+v", g.server.Requests())
	assert.Equal(t, 1, fetches, "one fetch of the revision for the ten Releases: %+v", g.server.Requests())

	var report diffreport.Report
	unmarshal(t, r.stdout, &report)
	assert.Equal(t, "pr", report.Revision)
	assert.Equal(t, diffreport.Summary{Releases: previewApps, Changed: 1, Unchanged: previewApps - 1}, report.Summary)
	require.Len(t, report.Releases, previewApps)
	for i, e := range report.Releases {
		name := fmt.Sprintf("app-%d", i)
		assert.Equal(t, diffreport.Release{Namespace: ns, Name: name, Cluster: diffreport.InCluster}, e.Release)
		require.NotNil(t, e.Diff, name)
		assert.Equal(t, subresourcesv1alpha1.RenderSourceRevision, e.Diff.RenderSource, name)
		require.NotNil(t, e.Diff.ResolvedSource, name)
		assert.Equal(t, "refs/heads/pr", e.Diff.ResolvedSource.Ref, name)
		assert.Equal(t, pr, e.Diff.ResolvedSource.Commit, name)
		if i == changed {
			assert.Equal(t, diffreport.Changed, e.Result, name)
			assert.Equal(t, diffreport.Counts{Changed: 1, Fields: previewKeys}, e.Counts, name)
		} else {
			assert.Equal(t, diffreport.Unchanged, e.Result, "%s: %s %s", name, e.Reason, e.Message)
			assert.Equal(t, diffreport.Counts{}, e.Counts, name)
		}
	}
	// The Releases' own view did not move.
	waitInSync(t, ns, fmt.Sprintf("app-%d", changed), metav1.ConditionTrue, "InSync")

	t.Run("changed only", func(t *testing.T) {
		r := kubectlConvoy(t, "", append(args, "--changed-only", "-o", "json")...)
		require.Equal(t, 1, r.code, r)
		var report diffreport.Report
		unmarshal(t, r.stdout, &report)
		assert.Equal(t, diffreport.Summary{Releases: previewApps, Changed: 1, Unchanged: previewApps - 1}, report.Summary)
		for i, e := range report.Releases {
			if i != changed {
				assert.Equal(t, diffreport.ReasonSameRender, e.Reason, "%s: the render at pr is the render of main", e.Release.Name)
			}
		}
		table := kubectlConvoy(t, "", append(args, "--changed-only")...)
		require.Equal(t, 1, table.code, table)
		summary, _, _ := strings.Cut(table.stdout, "\n\n")
		t.Logf("kubectl convoy %s --changed-only\n%s", strings.Join(args, " "), summary)
		assert.Regexp(t, fmt.Sprintf(`(?m)^%s\s+app-%d\s+in-cluster\s+Changed\s+1\s+0\s+0\s+%d\s+-$`, ns, changed, previewKeys), table.stdout)
		assert.Equal(t, 1, strings.Count(table.stdout, ns+" "), "only the changed Release is listed")
		assert.Contains(t, table.stdout, "9 Releases render the same at the revision as now: not listed (--changed-only).\n")
		assert.Contains(t, table.stdout, "@@ data.k00 @@")
	})

	t.Run("markdown, cut", func(t *testing.T) {
		whole := kubectlConvoy(t, "", append(args, "-o", "markdown")...)
		require.Equal(t, 1, whole.code, whole)
		assert.NotContains(t, whole.stdout, "Cut to fit")
		assert.Contains(t, whole.stdout, fmt.Sprintf("<details><summary>%s/app-%d: 1 changed, 0 added, 0 pruned, %d fields</summary>", ns, changed, previewKeys))

		const limit = 2048
		require.Greater(t, len(whole.stdout), limit)
		r := kubectlConvoy(t, "", append(args, "-o", "markdown", "--max-report-bytes", strconv.Itoa(limit))...)
		require.Equal(t, 1, r.code, r)
		t.Logf("-o markdown --max-report-bytes %d (%d bytes whole):\n%s", limit, len(whole.stdout), r.stdout)
		assert.LessOrEqual(t, len(r.stdout), limit)
		for i := range previewApps {
			assert.Contains(t, r.stdout, fmt.Sprintf("| %s/app-%d | in-cluster |", ns, i), "the table is whole")
		}
		assert.Regexp(t, `\*Cut to fit: \d+ of \d+ lines shown\.\*\n\n</details>\n`, r.stdout)
		assert.Contains(t, r.stdout, fmt.Sprintf("**Cut to fit %d bytes.** Truncated: the details of `%s/app-%d`.", limit, ns, changed))
		assert.Equal(t, strings.Count(r.stdout, "<details>"), strings.Count(r.stdout, "</details>"))
		fences := 0
		for line := range strings.Lines(r.stdout) {
			if strings.HasPrefix(line, "```") {
				fences++
			}
		}
		assert.Equal(t, 2, fences, "the one fence opened is closed")
	})
}
