package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoykustomize "github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// gitRepo is a repository served by git's own http-backend on 127.0.0.1.
type gitRepo struct {
	*gitserver.Repo
	server *gitserver.Server
	url    string
}

func startGitRepo(t *testing.T, opts gitserver.Options) *gitRepo {
	t.Helper()
	opts.Root = t.TempDir()
	repo, s, err := gitserver.StartRepo(opts, "apps.git")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return &gitRepo{Repo: repo, server: s, url: s.RepoURL("apps.git")}
}

func (g *gitRepo) commit(t *testing.T, branch string, tree gitserver.Tree) string {
	t.Helper()
	sha, err := g.Commit(branch, tree, "commit")
	require.NoError(t, err)
	return sha
}

func gitSource(url string, ref convoyv1alpha1.GitReference, path string) convoyv1alpha1.ReleaseSource {
	return convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: url, Ref: ref, Path: path}}
}

// monorepo is a repository of several apps: plain files, the kustomize
// example, a chart's directory.
func monorepo(t *testing.T, color string) gitserver.Tree {
	t.Helper()
	files := map[string]string{
		"apps/plain/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {color: " + color + "}\n",
		"apps/plain/README.md":         "not a manifest",
		"charts/web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":       "color: " + color + "\n",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-chart}\ndata: {color: {{ .Values.color | quote }}}\n",
	}
	for name, data := range readDir(t, exampleOverlay, "deploy/podinfo/") {
		files[name] = data
	}
	return gitserver.Tree{Files: files}
}

// A branch, a tag, a semver range and a commit pin of one repository; plain
// files, an overlay equal to kubectl kustomize, a chart's directory: each
// InSync once the stand-in applied it. A moved branch makes a Release in
// manual mode Drifted, naming the new commit, until a sync.
func TestGitSources(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	g := startGitRepo(t, gitserver.Options{})
	first := g.commit(t, "main", monorepo(t, "blue"))
	require.NoError(t, g.AnnotatedTag("v1.0.0", first, "one"))
	require.NoError(t, g.Tag("v1.1.0", first))

	for _, tc := range []struct {
		name string
		ref  convoyv1alpha1.GitReference
		path string
	}{
		{"plain", convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain"},
		{"overlay", convoyv1alpha1.GitReference{Tag: "v1.0.0"}, "deploy/podinfo/overlays/prod"},
		{"chart", convoyv1alpha1.GitReference{SemVer: "~1.0 || ~1.1"}, "charts/web"},
		{"pinned", convoyv1alpha1.GitReference{Commit: first}, "apps/plain"},
	} {
		newSourceRelease(t, ns, tc.name, gitSource(g.url, tc.ref, tc.path))
		if tc.ref.Commit != "" {
			// A commit alone is asked for by its hash.
			require.NoError(t, g.SetConfig("uploadpack.allowReachableSHA1InWant", "true"))
		}
		standIn.apply(ns, tc.name)
		waitInSync(t, ns, tc.name, metav1.ConditionTrue, "InSync")
		d := getDiff(t, ns, tc.name, "")
		require.NotNil(t, d.ResolvedSource, tc.name)
		assert.Equal(t, source.KindGitRepository, d.ResolvedSource.Kind, tc.name)
		assert.Equal(t, first, d.ResolvedSource.Commit, tc.name)
	}
	assert.Equal(t, "refs/tags/v1.1.0", getDiff(t, ns, "chart", "").ResolvedSource.Ref, "the highest tag of the range")
	assertSameAsKubectlKustomize(t, ns, "overlay", filepath.Join(exampleOverlay, "overlays/prod"))
	get := kubectlConvoy(t, "", "release", "get", "plain", "-n", ns)
	require.Zero(t, get.code, "%s", get)
	assert.Contains(t, get.stdout, g.url+" refs/heads/main (commit "+first+")")

	moved := g.commit(t, "main", monorepo(t, "green"))
	cond := waitInSync(t, ns, "plain", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "ConfigMap "+ns+"/plain is Modified: data.color")
	assert.Equal(t, moved, getDiff(t, ns, "plain", "").ResolvedSource.Commit, "the new commit")
	standIn.apply(ns, "plain")
	waitInSync(t, ns, "plain", metav1.ConditionTrue, "InSync")
	// The pin and the tags did not move.
	assert.Equal(t, first, getDiff(t, ns, "pinned", "").ResolvedSource.Commit)
	waitInSync(t, ns, "overlay", metav1.ConditionTrue, "InSync")
}

// Basic auth from a Secret, read as the Release; without it the server's
// refusal is the cause.
func TestGitCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	g := startGitRepo(t, gitserver.Options{Username: "bob", Password: "s3cret"})
	g.commit(t, "main", monorepo(t, "blue"))
	_, err := kubeClient(t).CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data: map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	src := gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain")
	src.Git.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: "git-creds"}
	newSourceRelease(t, ns, "authed", src)
	newStandIn(t).apply(ns, "authed")
	waitInSync(t, ns, "authed", metav1.ConditionTrue, "InSync")

	newSourceRelease(t, ns, "anonymous", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain"))
	assertSourceUndetermined(t, ns, "anonymous", sourcefailure.ReasonSourceUnauthorized, "the server refused the credentials")
}

// Hostile repositories and servers: each Undetermined with its reason while
// the server keeps serving the others; a remote kustomize resource makes no
// request; a path out of the repository is refused by the CRD.
func TestGitHostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	var remote atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		remote.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"))
	}))
	t.Cleanup(srv.Close)
	g := startGitRepo(t, gitserver.Options{})
	tree := monorepo(t, "blue")
	tree.Symlinks = map[string]string{"apps/leak/passwd.yaml": "/etc/passwd"}
	tree.Files["apps/leak/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak}\n"
	tree.Files["apps/remote/kustomization.yaml"] = "resources:\n- " + srv.URL + "/cm.yaml\n"
	tree.Files["apps/big/blob.yaml"] = "# " + strings.Repeat("x", 2<<20) + "\n"
	g.commit(t, "main", tree)
	main := convoyv1alpha1.GitReference{Branch: "main"}

	newSourceRelease(t, ns, "good", gitSource(g.url, main, "apps/plain"))
	newStandIn(t).apply(ns, "good")
	waitInSync(t, ns, "good", metav1.ConditionTrue, "InSync")

	newSourceRelease(t, ns, "leak", gitSource(g.url, main, "apps/leak"))
	assertSourceUndetermined(t, ns, "leak", failure.ReasonLinkUnsupported, "apps/leak/passwd.yaml is a symbolic link")
	newSourceRelease(t, ns, "remote", gitSource(g.url, main, "apps/remote"))
	assertSourceUndetermined(t, ns, "remote", convoykustomize.ReasonKustomizeRemoteRefused, "is a URL")
	assert.Zero(t, remote.Load(), "no request reached the server the kustomization names")

	// The blob is larger than --max-artifact-bytes (1 MiB in these tests).
	other := startGitRepo(t, gitserver.Options{})
	other.commit(t, "main", gitserver.Tree{Files: map[string]string{"big.yaml": tree.Files["apps/big/blob.yaml"]}})
	newSourceRelease(t, ns, "big", gitSource(other.url, main, ""))
	assertSourceUndetermined(t, ns, "big", sourcefailure.ReasonArtifactTooLarge, "file big.yaml is")

	slow := startGitRepo(t, gitserver.Options{Delay: time.Minute})
	slow.commit(t, "main", monorepo(t, "blue"))
	newSourceRelease(t, ns, "slow", gitSource(slow.url, main, "apps/plain"))
	assertSourceUndetermined(t, ns, "slow", sourcefailure.ReasonFetchTimeout)

	down := startGitRepo(t, gitserver.Options{})
	down.commit(t, "main", monorepo(t, "blue"))
	down.server.SetDown(true)
	newSourceRelease(t, ns, "down", gitSource(down.url, main, "apps/plain"))
	assertSourceUndetermined(t, ns, "down", sourcefailure.ReasonSourceUnreachable)

	// The server kept serving.
	waitInSync(t, ns, "good", metav1.ConditionTrue, "InSync")

	for _, path := range []string{"../etc", "/etc", "apps/../../x"} {
		r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "escape", Namespace: ns}, Spec: convoyv1alpha1.ReleaseSpec{
			Source: gitSource(g.url, main, path)}}
		_, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Create(ctx, r, metav1.CreateOptions{})
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), "must be relative to the repository's root", path)
	}
	for _, bad := range []convoyv1alpha1.GitReference{{}, {Branch: "main", Tag: "v1"}, {Commit: "abc"}} {
		r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "badref", Namespace: ns}, Spec: convoyv1alpha1.ReleaseSpec{
			Source: gitSource(g.url, bad, "")}}
		_, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Create(ctx, r, metav1.CreateOptions{})
		require.Error(t, err, "%+v", bad)
	}
}

// Many Releases on one repository: while nothing moves, one ref listing
// per --source-resolve-max-age (2s here) for all of them together and no
// fetch, counted at the server.
func TestGitManyReleasesOneListing(t *testing.T) {
	// Not parallel: it counts the listings the server sends in a fixed window.
	standIn := newStandIn(t)
	g := startGitRepo(t, gitserver.Options{})
	g.commit(t, "main", monorepo(t, "blue"))
	const releases = 12
	var namespaces []string
	for range releases {
		ns := newNamespace(t)
		namespaces = append(namespaces, ns)
		newSourceRelease(t, ns, "podinfo", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "deploy/podinfo/overlays/prod"))
		standIn.apply(ns, "podinfo")
	}
	for _, ns := range namespaces {
		waitInSync(t, ns, "podinfo", metav1.ConditionTrue, "InSync")
	}
	g.server.Reset()
	const window = 12 * time.Second
	time.Sleep(window)
	listings, fetches := g.server.Listings(), g.server.Fetches()
	t.Logf("%d Releases on one repository, %s: %d ref listings, %d fetches", releases, window, listings, fetches)
	assert.LessOrEqual(t, listings, int(window/(2*time.Second))+2, "one listing per max age for all of them")
	assert.Zero(t, fetches, "no fetch while nothing moves")
}

// SSH against git-upload-pack behind an SSH server on 127.0.0.1: the
// identity and known_hosts of the Release's Secret; a known_hosts that
// lists another key for the host is refused (GitHostKeyRefused; the unit
// test TestGitSSH checks that no git-upload-pack runs then).
func TestGitSSH(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	root := t.TempDir()
	repo, err := gitserver.InitBare(root, "apps.git")
	require.NoError(t, err)
	commit, err := repo.Commit("main", monorepo(t, "blue"), "first")
	require.NoError(t, err)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	srv := gitserver.RequireSSH(t, gitserver.SSHOptions{Root: root, AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}})
	identity, err := ssh.MarshalPrivateKey(key, "")
	require.NoError(t, err)
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	other, err := ssh.NewSignerFromKey(otherKey)
	require.NoError(t, err)
	for name, knownHosts := range map[string][]byte{
		"ssh-creds":  srv.KnownHosts(),
		"ssh-forged": []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.Addr)}, other.PublicKey()) + "\n"),
	} {
		_, err := kubeClient(t).CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string][]byte{"identity": pem.EncodeToMemory(identity), "known_hosts": knownHosts}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	src := gitSource(srv.RepoURL("apps.git"), convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain")
	src.Git.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: "ssh-creds"}
	newSourceRelease(t, ns, "ssh", src)
	newStandIn(t).apply(ns, "ssh")
	waitInSync(t, ns, "ssh", metav1.ConditionTrue, "InSync")
	assert.Equal(t, commit, getDiff(t, ns, "ssh", "").ResolvedSource.Commit)

	forged := gitSource(srv.RepoURL("apps.git"), convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain")
	forged.Git.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: "ssh-forged"}
	newSourceRelease(t, ns, "forged", forged)
	assertSourceUndetermined(t, ns, "forged", sourcefailure.ReasonGitHostKeyRefused, "host key mismatch")
}
