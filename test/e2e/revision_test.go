package e2e

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// atRevision is the query of ?revision=rev.
func atRevision(rev string) string { return "?revision=" + url.QueryEscape(rev) }

// assertOnlyColorChanged checks that d compares the Release's one
// ConfigMap and finds data.color changed, and nothing else.
func assertOnlyColorChanged(t *testing.T, d subresourcesv1alpha1.ReleaseDiff, name string) {
	t.Helper()
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, d.Result, "%s: %s", d.Reason, d.Message)
	require.Len(t, d.Objects, 1)
	assert.Equal(t, name, d.Objects[0].Name)
	assert.Equal(t, subresourcesv1alpha1.ObjectModified, d.Objects[0].Status)
	require.Len(t, d.Objects[0].Changes, 1)
	assert.Equal(t, "data.color", d.Objects[0].Changes[0].Path)
}

// GET /diff?revision= of a Git source: a branch, a pull request's ref and a
// commit each compare exactly what they would change, naming what the
// revision resolved to; the Release's own InSync, lastResolved and desired
// render stay as they were; a revision the repository does not have is a
// 404 naming it; a ConfigMap source has no revisions; /preview shows the
// revision's objects.
func TestDiffAtGitRevision(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	g := startGitRepo(t, gitserver.Options{})
	first := g.commit(t, "main", monorepo(t, "blue"))
	newSourceRelease(t, ns, "plain", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain"))
	standIn.apply(ns, "plain")
	waitInSync(t, ns, "plain", metav1.ConditionTrue, "InSync")

	feature := g.commit(t, "feature", monorepo(t, "green"))
	// A pull request from a fork: its head is reachable by refs/pull/7/head
	// only, as a forge keeps it.
	pr := g.commit(t, "fork-work", monorepo(t, "red"))
	require.NoError(t, g.SetRef("refs/pull/7/head", pr))
	require.NoError(t, g.DeleteRef("refs/heads/fork-work"))

	for _, tc := range []struct {
		rev, wantRef, wantCommit string
	}{
		{"feature", "refs/heads/feature", feature},
		{"refs/heads/feature", "refs/heads/feature", feature},
		{"refs/pull/7/head", "refs/pull/7/head", pr},
		{pr, "refs/pull/7/head", pr},
	} {
		d := getDiff(t, ns, "plain", atRevision(tc.rev))
		assertOnlyColorChanged(t, d, "plain")
		require.NotNil(t, d.ResolvedSource, tc.rev)
		assert.Equal(t, tc.wantRef, d.ResolvedSource.Ref, tc.rev)
		assert.Equal(t, tc.wantCommit, d.ResolvedSource.Commit, tc.rev)
		assert.Equal(t, subresourcesv1alpha1.RenderSourceRevision, d.RenderSource, tc.rev)
	}
	p := preview(t, ns, "plain", atRevision("refs/pull/7/head"))
	objects := previewObjects(t, p)
	require.Len(t, objects, 1)
	assert.Equal(t, "red", objects[0].Object["data"].(map[string]any)["color"])
	assert.Equal(t, pr, p.ResolvedSource.Commit)

	// The Release's own look is unchanged: the desired render, the
	// condition and status.lastResolved.
	d := getDiff(t, ns, "plain", "")
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result)
	assert.Equal(t, first, d.ResolvedSource.Commit)
	assert.Equal(t, subresourcesv1alpha1.RenderSourceFresh, d.RenderSource)
	r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "plain", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status, "%s: %s", c.Reason, c.Message)
	require.NotNil(t, r.Status.LastResolved)
	assert.Equal(t, first, r.Status.LastResolved.Commit)

	for _, tc := range []struct {
		name, query, inMessage string
	}{
		{"no such branch", atRevision("nope"), `NotFound`},
		{"no such pull request", atRevision("refs/pull/8/head"), "no ref refs/pull/8/head"},
		{"with a render", atRevision("main") + "&render=0123456789abcdef", "render and revision cannot both be asked for"},
		{"white space", atRevision("main --upload-pack=touch"), "is not a revision"},
	} {
		res := kubectl(t, "", "", "get", "--raw", diffPath(ns, "plain")+tc.query)
		require.Error(t, res.err, tc.name)
		assert.Contains(t, res.stderr, tc.inMessage, tc.name)
	}
	res := kubectl(t, "", "", "get", "--raw", diffPath(ns, "plain")+atRevision("nope"), "-v=6")
	assert.Contains(t, res.stderr, "404 Not Found", "a revision that does not exist is a 404")
	assert.Contains(t, res.stderr, `revision \"nope\" is no commit hash, ref, tag or branch of the repository`)

	newSourceRelease(t, ns, "local", convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "absent"}})
	d = getDiff(t, ns, "local", atRevision("main"))
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, d.Result)
	assert.Contains(t, d.Message, "a ConfigMap source has no revisions")
}

// GET /diff?revision= of an OCI source: a tag the Release does not follow
// yet is compared; where the Release asks for signatures, an unsigned
// revision is refused as the resolved one would be, and nothing of it is
// shown.
func TestDiffAtOCIRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	key, pub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	keysSecret(t, ns, "ci-keys", map[string][]byte{"ci.pub": pub})

	signed := signedBundle(t, reg, "apps/web", "v1", "blue")
	require.NoError(t, signTag(ctx, reg, "apps/web", signed, key))
	newSourceRelease(t, ns, "web", ociSource(reg.URL("apps/web"), "v1", ""), withVerify("ci-keys"))
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	next := signedBundle(t, reg, "apps/web", "v2", "green")
	require.NoError(t, signTag(ctx, reg, "apps/web", next, key))
	d := getDiff(t, ns, "web", atRevision("v2"))
	assertOnlyColorChanged(t, d, "apps-web-cm")
	assert.Equal(t, next, d.ResolvedSource.Digest)
	require.NotNil(t, d.ResolvedSource.Verified, "verified as the Release asks")
	assert.Equal(t, next, getDiff(t, ns, "web", atRevision(next)).ResolvedSource.Digest, "by digest")

	unsigned := signedBundle(t, reg, "apps/web", "v3", "red")
	d = getDiff(t, ns, "web", atRevision("v3"))
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, d.Result)
	assert.Equal(t, verify.ReasonSignatureUnverified, d.Reason)
	assert.Contains(t, d.Message, unsigned)
	assert.Empty(t, d.Objects, "nothing of an unsigned revision is shown")
	res := kubectl(t, "", "", "get", "--raw", previewPath(ns, "web")+atRevision("v3"))
	require.Error(t, res.err, "no preview of an unsigned revision")

	res = kubectl(t, "", "", "get", "--raw", diffPath(ns, "web")+atRevision("v9"), "-v=6")
	require.Error(t, res.err)
	assert.Contains(t, res.stderr, "404 Not Found")
	assert.Equal(t, signed, getDiff(t, ns, "web", "").ResolvedSource.Digest, "the Release still follows v1")
}
