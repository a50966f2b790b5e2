package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
)

func refreshPath(namespace, name string) string {
	return fmt.Sprintf("%s/namespaces/%s/releases/%s/refresh", subresourcesAPI, namespace, name)
}

// refresh POSTs releases/NAME/refresh with kubectl as the user of
// kubeconfig ("": the admin) and returns the time it recorded.
func refresh(t *testing.T, kubeconfig, namespace, name string) string {
	t.Helper()
	out := mustKubectl(t, kubeconfig, "{}", "create", "--raw", refreshPath(namespace, name), "-f", "-")
	var r subresourcesv1alpha1.ReleaseRefresh
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.NotNil(t, r.RequestedAt, out)
	return r.RequestedAt.UTC().Format(metav1.RFC3339Micro)
}

// waitRefreshed waits until the drift loop handled the refresh of at (or
// a later one) and returns the Release.
func waitRefreshed(t *testing.T, namespace, name, at string) *convoyv1alpha1.Release {
	t.Helper()
	want, err := time.Parse(time.RFC3339Nano, at)
	require.NoError(t, err)
	var r *convoyv1alpha1.Release
	eventually(t, "the refresh of "+namespace+"/"+name+" at "+at+" handled", func(ctx context.Context) error {
		var err error
		r, err = convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		handled, err := time.Parse(time.RFC3339Nano, r.Status.LastHandledRefreshAt)
		if err != nil || handled.Before(want) {
			return fmt.Errorf("lastHandledRefreshAt %q", r.Status.LastHandledRefreshAt)
		}
		return nil
	})
	return r
}

// A Release checked every 10 minutes sees a new commit of its branch, a
// tag moved in its registry and a new chart version in its Helm index
// within seconds of POST /refresh: status.lastResolved names the new
// revision and the Release is Drifted. Refreshes need create on
// releases/refresh; many at once make one pass and one listing; the
// plugin's --wait returns once the request was handled.
func TestRefresh(t *testing.T) {
	// Not parallel: it counts the listings its refreshes cause, which depends
	// on their timing.
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	slow := every(10 * time.Minute)

	g := startGitRepo(t, gitserver.Options{})
	first := g.commit(t, "main", monorepo(t, "blue"))
	newSourceRelease(t, ns, "git", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain"), slow)
	standIn.apply(ns, "git")
	waitInSync(t, ns, "git", metav1.ConditionTrue, "InSync")
	eventually(t, "lastResolved names the first commit", func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "git", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lr := r.Status.LastResolved; lr == nil || lr.Commit != first || lr.Ref != "refs/heads/main" || lr.Kind != "GitRepository" {
			return fmt.Errorf("lastResolved %+v", lr)
		}
		return nil
	})

	second := g.commit(t, "main", monorepo(t, "green"))
	pushed := time.Now()
	r := waitRefreshed(t, ns, "git", refresh(t, "", ns, "git"))
	t.Logf("git: the refresh handled %s after the push", time.Since(pushed).Round(time.Millisecond))
	require.NotNil(t, r.Status.LastResolved)
	assert.Equal(t, second, r.Status.LastResolved.Commit, "the new commit")
	waitInSync(t, ns, "git", metav1.ConditionFalse, "Drifted")
	eventually(t, "an Event names who asked for the refresh", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "RefreshRequested" && e.Regarding.Name == "git" && strings.Contains(e.Note, "Refresh requested by admin") {
				return nil
			}
		}
		return fmt.Errorf("no RefreshRequested Event among %d", len(events.Items))
	})

	// An OCI tag moved.
	reg := startTestRegistry(t, ociregistry.Options{})
	signedBundle(t, reg, "apps/web", "v1", "blue")
	newSourceRelease(t, ns, "oci", ociSource(reg.URL("apps/web"), "v1", ""), slow)
	standIn.apply(ns, "oci")
	waitInSync(t, ns, "oci", metav1.ConditionTrue, "InSync")
	moved := signedBundle(t, reg, "apps/web", "v1", "green")
	r = waitRefreshed(t, ns, "oci", refresh(t, "", ns, "oci"))
	require.NotNil(t, r.Status.LastResolved)
	assert.Equal(t, moved, r.Status.LastResolved.Digest, "the tag's new digest")
	assert.Equal(t, "v1", r.Status.LastResolved.Tag)
	waitInSync(t, ns, "oci", metav1.ConditionFalse, "Drifted")

	// A new chart version in a Helm index.
	repo := startHelmRepository(t)
	index := func(versions ...string) string {
		var entries []string
		for _, v := range versions {
			tgz, _ := webChart(t, v)
			repo.put("web-"+v+".tgz", tgz, "")
			entries = append(entries, fmt.Sprintf("  - {name: web, version: %q, urls: [web-%s.tgz], digest: %s}", v, v, digestOf(tgz)))
		}
		return "apiVersion: v1\nentries:\n  web:\n" + strings.Join(entries, "\n") + "\n"
	}
	repo.put("", nil, index("1.0.0"))
	newSourceRelease(t, ns, "helm", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web", Version: ">=1.0.0"}}, slow)
	standIn.apply(ns, "helm")
	waitInSync(t, ns, "helm", metav1.ConditionTrue, "InSync")
	repo.put("", nil, index("1.0.0", "1.1.0"))
	r = waitRefreshed(t, ns, "helm", refresh(t, "", ns, "helm"))
	require.NotNil(t, r.Status.LastResolved)
	assert.Equal(t, "1.1.0", r.Status.LastResolved.Version)
	waitInSync(t, ns, "helm", metav1.ConditionFalse, "Drifted")

	// Without create on releases/refresh: 403, nothing recorded.
	viewer := "refresh-viewer-" + ns
	grant(t, ns, viewer, rbacPolicy("convoy.kumodo.io", "releases", "get", "list"), subresourceRule("diff", "get"))
	denied := kubectl(t, user(t, viewer), "{}", "create", "--raw", refreshPath(ns, "git"), "-f", "-")
	require.Error(t, denied.err)
	assert.Contains(t, denied.stderr, "Forbidden")
	allowed := "refresh-editor-" + ns
	grant(t, ns, allowed, subresourceRule("refresh", "create"))
	refresh(t, user(t, allowed), ns, "git")

	// 50 refreshes at once: one pass, one listing of the repository.
	waitRefreshed(t, ns, "git", refresh(t, "", ns, "git"))
	g.server.Reset()
	var (
		mu     sync.Mutex
		latest string
		wg     sync.WaitGroup
	)
	for range 50 {
		wg.Go(func() {
			var out subresourcesv1alpha1.ReleaseRefresh
			err := kubeClient(t).CoreV1().RESTClient().Post().AbsPath(refreshPath(ns, "git")).Body([]byte("{}")).Do(ctx).Into(&out)
			if assert.NoError(t, err) && assert.NotNil(t, out.RequestedAt) {
				at := out.RequestedAt.UTC().Format(metav1.RFC3339Micro)
				mu.Lock()
				latest = max(latest, at)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	waitRefreshed(t, ns, "git", latest)
	listings := g.server.Listings()
	t.Logf("50 refreshes of one Release: %d ref listings", listings)
	// One pass handles the requests of its RefreshDelay; on a loaded
	// machine, requests recorded after its listing began make one more.
	assert.LessOrEqual(t, listings, 2, "one listing for 50 refreshes")
	assert.Positive(t, listings)

	// The plugin waits until the request was handled.
	third := g.commit(t, "main", monorepo(t, "red"))
	res := kubectlConvoy(t, "", "release", "refresh", "git", "-n", ns, "--wait", "--timeout=2m")
	require.Zero(t, res.code, "%s", res)
	assert.Contains(t, res.stdout, "refresh requested for release "+ns+"/git at ")
	assert.Contains(t, res.stdout, "(commit "+third+")")
	assert.Contains(t, res.stdout, "InSync: False (Drifted)")
	get := kubectlConvoy(t, "", "release", "get", "git", "-n", ns)
	require.Zero(t, get.code, "%s", get)
	assert.Contains(t, get.stdout, "(commit "+third+")")
}

// A refresh annotation of any value, written by anyone who may update the
// Release, is handled and recorded in a form the CRD accepts: 65 bytes
// that are no time, and a time far in the future, are requests of the
// moment the drift loop sees them. Neither keeps the loop from its
// verdicts and sync requests (a kubectl scale behind convoy's back is
// still found and asked to be healed), and the plugin's --wait waits for
// its own request after a far-future one.
func TestRefreshOfAnyValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), automatic)
	standIn := newStandIn(t)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	release := func() *convoyv1alpha1.Release {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return r
	}

	for i, value := range []string{strings.Repeat("x", 65), "9999-12-31T00:00:00Z"} {
		before := time.Now().UTC().Add(-time.Second)
		mustKubectl(t, "", "", "annotate", "--overwrite", "release.convoy.kumodo.io/web", "-n", ns, convoyv1alpha1.AnnotationRefreshRequestedAt+"="+value)
		var handled string
		eventually(t, fmt.Sprintf("the refresh %.20s... handled", value), func(ctx context.Context) error {
			r := release()
			handled = r.Status.LastHandledRefreshAt
			at, err := time.Parse(time.RFC3339Nano, handled)
			if err != nil || at.Before(before) {
				return fmt.Errorf("lastHandledRefreshAt %q", handled)
			}
			return nil
		})
		assert.LessOrEqual(t, len(handled), 64)
		at, _ := time.Parse(time.RFC3339Nano, handled)
		assert.WithinDuration(t, time.Now(), at, time.Minute, "the moment it was seen, not the value")

		// The loop goes on: drift found, a sync requested (the stand-in
		// syncs).
		synced := release().Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]
		mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, fmt.Sprintf("--replicas=%d", 4+i))
		eventually(t, "a sync request after the scale", func(ctx context.Context) error {
			if release().Annotations[convoyv1alpha1.AnnotationSyncRequestedAt] == synced {
				return fmt.Errorf("no new sync request")
			}
			return nil
		})
		waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
		standIn.apply(ns, "web")
		waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
		assert.Equal(t, value, release().Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt], "the annotation is the user's")
		assert.Equal(t, handled, release().Status.LastHandledRefreshAt, "handled once, not at every pass")
	}

	// After the far-future value, the plugin waits for its own request.
	res := kubectlConvoy(t, "", "release", "refresh", "web", "-n", ns, "--wait", "--timeout=2m")
	require.Zero(t, res.code, "%s", res)
	r := release()
	assert.Equal(t, r.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt], r.Status.LastHandledRefreshAt, "its own request handled")
	assert.Contains(t, res.stdout, "handled: "+r.Status.LastHandledRefreshAt)
}
