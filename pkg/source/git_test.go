package source

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// gitRelease is a Release of shop whose source is a Git repository.
func gitRelease(src convoyv1alpha1.GitRepositorySource) *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{Git: &src}}}
}

// gitFixture is a repository "apps.git" served by git http-backend on
// 127.0.0.1.
type gitFixture struct {
	repo   *gitserver.Repo
	server *gitserver.Server
	url    string
}

func startGit(t *testing.T, opts gitserver.Options) *gitFixture {
	t.Helper()
	return startGitIn(t, t.TempDir(), opts)
}

// startGitIn is startGit with the repository under root.
func startGitIn(t *testing.T, root string, opts gitserver.Options) *gitFixture {
	t.Helper()
	opts.Root = root
	repo, s, err := gitserver.StartRepo(opts, "apps.git")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return &gitFixture{repo: repo, server: s, url: s.RepoURL("apps.git")}
}

func (g *gitFixture) commit(t *testing.T, branch string, files map[string]string) string {
	t.Helper()
	sha, err := g.repo.Commit(branch, gitserver.Tree{Files: files}, "commit")
	require.NoError(t, err)
	return sha
}

func fileNames(src *Source) []string {
	var out []string
	for _, f := range src.Files {
		out = append(out, f.Name)
	}
	return out
}

// gitTransport is a way to a repository: its URL and the inputs that hold
// its credentials (secretRef "creds").
type gitTransport struct {
	name   string
	url    string
	inputs func() Inputs
	ref    *convoyv1alpha1.LocalObjectReference
}

// sshServer starts OpenSSH's sshd with opts and a new key it authorizes,
// and returns it with the Secret "creds" that holds the key and the
// server's known_hosts.
func sshServer(t *testing.T, opts gitserver.SSHOptions) (*gitserver.SSHServer, *corev1.Secret) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	opts.AuthorizedKeys = []ssh.PublicKey{signer.PublicKey()}
	srv := gitserver.RequireSSH(t, opts)
	identity, err := ssh.MarshalPrivateKey(key, "")
	require.NoError(t, err)
	return srv, secret("creds", corev1.SecretTypeOpaque, map[string][]byte{"identity": pem.EncodeToMemory(identity), "known_hosts": srv.KnownHosts()})
}

// gitWays are the ways to g's apps.git: git http-backend, and
// OpenSSH's sshd with git-upload-pack on the same root, with a key and
// known_hosts in the Secret creds.
func gitWays(t *testing.T, g *gitFixture, root string) []gitTransport {
	t.Helper()
	srv, creds := sshServer(t, gitserver.SSHOptions{Root: root})
	return []gitTransport{
		{name: "http", url: g.url, inputs: func() Inputs { return inputsOf() }},
		{name: "ssh", url: srv.RepoURL("apps.git"), inputs: func() Inputs { return inputsOf(creds) }, ref: &convoyv1alpha1.LocalObjectReference{Name: "creds"}},
	}
}

// A branch, a tag (annotated: its commit), a semver range over the tags
// and a commit: each resolved from one listing and read from the tree,
// over HTTP and over SSH.
func TestGitRefs(t *testing.T) {
	root := t.TempDir()
	g := startGitIn(t, root, gitserver.Options{})
	v1 := g.commit(t, "main", map[string]string{"apps/web/cm.yaml": "kind: ConfigMap", "README.md": "hello"})
	require.NoError(t, g.repo.AnnotatedTag("v1.0.0", v1, "one"))
	v12 := g.commit(t, "main", map[string]string{"apps/web/cm.yaml": "kind: ConfigMap\n# 1.2", "README.md": "hello"})
	require.NoError(t, g.repo.Tag("v1.2.0", v12))
	rc := g.commit(t, "main", map[string]string{"apps/web/cm.yaml": "kind: ConfigMap\n# rc", "README.md": "hello"})
	require.NoError(t, g.repo.Tag("v2.0.0-rc.1", rc))
	tip := g.commit(t, "main", map[string]string{"apps/web/cm.yaml": "kind: ConfigMap\n# tip", "README.md": "hello"})

	for _, tr := range gitWays(t, g, root) {
		source := func(ref convoyv1alpha1.GitReference, path string) *convoyv1alpha1.Release {
			return gitRelease(convoyv1alpha1.GitRepositorySource{URL: tr.url, Ref: ref, Path: path, SecretRef: tr.ref})
		}
		t.Run(tr.name, func(t *testing.T) {
			require.NoError(t, g.repo.SetConfig("uploadpack.allowReachableSHA1InWant", "false"))
			for _, tc := range []struct {
				name           string
				ref            convoyv1alpha1.GitReference
				commit, gitRef string
			}{
				{"branch", convoyv1alpha1.GitReference{Branch: "main"}, tip, "refs/heads/main"},
				{"annotated tag", convoyv1alpha1.GitReference{Tag: "v1.0.0"}, v1, "refs/tags/v1.0.0"},
				{"lightweight tag", convoyv1alpha1.GitReference{Tag: "v1.2.0"}, v12, "refs/tags/v1.2.0"},
				{"semver, prereleases excluded", convoyv1alpha1.GitReference{SemVer: ">=1.0.0"}, v12, "refs/tags/v1.2.0"},
				{"semver naming a prerelease", convoyv1alpha1.GitReference{SemVer: ">=2.0.0-0"}, rc, "refs/tags/v2.0.0-rc.1"},
				{"commit, the tip of its branch", convoyv1alpha1.GitReference{Commit: tip, Branch: "main"}, tip, "refs/heads/main"},
				{"commit behind the tip of its branch", convoyv1alpha1.GitReference{Commit: v1, Branch: "main"}, v1, "refs/heads/main"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f, _ := newFetcher(t)
					src, err := f.Fetch(context.Background(), source(tc.ref, "apps/web"), tr.inputs())
					require.NoError(t, err)
					assert.Equal(t, &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: tr.url, Ref: tc.gitRef, Commit: tc.commit}, src.Resolved)
					assert.Equal(t, []string{"README.md", "apps/web/cm.yaml"}, fileNames(src))
					assert.Equal(t, "apps/web", src.Path)
					assert.Equal(t, tr.url+" "+tc.gitRef+"@"+tc.commit, src.Where)
				})
			}

			// A commit by its hash alone: refused by a server that does not let
			// one ask for it, served by one that does.
			f0, _ := newFetcher(t)
			ferr := fetchErr(t, f0, source(convoyv1alpha1.GitReference{Commit: v12}, ""), tr.inputs(), sourcefailure.ReasonArtifactNotFound)
			assert.Contains(t, ferr.Message, "uploadpack.allowReachableSHA1InWant")
			require.NoError(t, g.repo.SetConfig("uploadpack.allowReachableSHA1InWant", "true"))
			f, _ := newFetcher(t)
			src, err := f.Fetch(context.Background(), source(convoyv1alpha1.GitReference{Commit: v12}, ""), tr.inputs())
			require.NoError(t, err)
			assert.Equal(t, v12, src.Resolved.Commit)
			assert.Contains(t, string(src.Files[1].Data), "# 1.2")

			f, _ = newFetcher(t)
			for _, ref := range []convoyv1alpha1.GitReference{{Branch: "nope"}, {Tag: "v9"}, {SemVer: ">=3.0.0"}} {
				fetchErr(t, f, source(ref, ""), tr.inputs(), sourcefailure.ReasonArtifactNotFound)
			}
			fetchErr(t, f, source(convoyv1alpha1.GitReference{SemVer: "not a range"}, ""), tr.inputs(), sourcefailure.ReasonSourceInvalid)
		})
	}
}

// Many Releases on one repository: one listing per resolve max age, one
// fetch per commit; nothing while nothing moves; a moved branch fetches
// its new commit once.
func TestGitSharesListingsAndFetches(t *testing.T) {
	g := startGit(t, gitserver.Options{})
	g.commit(t, "main", map[string]string{"a.yaml": "kind: ConfigMap"})
	f, clk := newFetcher(t)
	rel := gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}})
	// The first: a listing, then a fetch (whose session begins with the
	// server's advertisement, another GET of info/refs).
	_, err := f.Fetch(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	listings, fetches := g.server.Listings(), g.server.Fetches()
	assert.Equal(t, 2, listings)
	assert.Positive(t, fetches)
	for range 20 {
		_, err := f.Fetch(context.Background(), rel, inputsOf())
		require.NoError(t, err)
		_, err = f.Resolve(context.Background(), rel, inputsOf())
		require.NoError(t, err)
	}
	assert.Equal(t, listings, g.server.Listings(), "no request within the max age")
	assert.Equal(t, fetches, g.server.Fetches())

	clk.SetTime(clk.Now().Add(DefaultResolveMaxAge + time.Second))
	_, err = f.Fetch(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, listings+1, g.server.Listings(), "a listing per max age")
	assert.Equal(t, fetches, g.server.Fetches(), "no fetch while nothing moves")

	moved := g.commit(t, "main", map[string]string{"a.yaml": "kind: ConfigMap\n# moved"})
	clk.SetTime(clk.Now().Add(DefaultResolveMaxAge + time.Second))
	digest, err := f.Resolve(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, "git:"+moved, digest)
	src, err := f.Fetch(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, moved, src.Resolved.Commit)
	assert.Greater(t, g.server.Fetches(), fetches)
}

// Basic auth from a Secret; without it the server refuses; a commit
// fetched for one set of credentials is served to another only after its
// own listing succeeded.
func TestGitCredentials(t *testing.T) {
	g := startGit(t, gitserver.Options{Username: "bob", Password: "pw"})
	g.commit(t, "main", map[string]string{"a.yaml": "kind: ConfigMap"})
	creds := secret("creds", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob"), "password": []byte("pw")})
	wrong := secret("wrong", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob"), "password": []byte("nope")})
	f, _ := newFetcher(t)
	ref := convoyv1alpha1.GitReference{Branch: "main"}
	_, err := f.Fetch(context.Background(), gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: ref,
		SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "creds"}}), inputsOf(creds))
	require.NoError(t, err)
	ferr := fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: ref}), inputsOf(), sourcefailure.ReasonSourceUnauthorized)
	assert.Contains(t, ferr.Message, g.url+": listing the refs")
	fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: ref, SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "wrong"}}), inputsOf(wrong), sourcefailure.ReasonSourceUnauthorized)
	for _, r := range g.server.Requests() {
		assert.NotContains(t, r.Path, "pw")
	}
	bad := secret("bad", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob")})
	fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: ref, SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "bad"}}), inputsOf(bad), credentials.ReasonCredentialsInvalid)
}

// Hostile repositories and servers: a link or a submodule under the path,
// an oversized blob or fetch, a server that is down, slow, redirects away,
// or is on an address the policy refuses; each with its reason.
func TestGitHostile(t *testing.T) {
	ctx := context.Background()
	g := startGit(t, gitserver.Options{})
	_, err := g.repo.Commit("main", gitserver.Tree{
		Files:      map[string]string{"apps/web/cm.yaml": "kind: ConfigMap", "apps/api/cm.yaml": "kind: ConfigMap", "big/blob.yaml": strings.Repeat("x", 200<<10)},
		Symlinks:   map[string]string{"apps/web/passwd.yaml": "/etc/passwd", "elsewhere/link": "../apps"},
		Submodules: map[string]string{"apps/vendored/lib": strings.Repeat("a", 40)},
	}, "hostile")
	require.NoError(t, err)
	main := convoyv1alpha1.GitReference{Branch: "main"}
	f, _ := newFetcher(t)

	ferr := fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main, Path: "apps/web"}), inputsOf(), failure.ReasonLinkUnsupported)
	assert.Contains(t, ferr.Message, "apps/web/passwd.yaml is a symbolic link")
	ferr = fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main, Path: "apps/vendored"}), inputsOf(), failure.ReasonLinkUnsupported)
	assert.Contains(t, ferr.Message, "apps/vendored/lib is a submodule")
	src, err := f.Fetch(ctx, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main, Path: "apps/api"}), inputsOf())
	require.NoError(t, err, "a link elsewhere is not read, nor refused")
	assert.Equal(t, []string{"apps/vendored/lib", "apps/web/passwd.yaml", "elsewhere/link"}, src.Links, "but listed")
	for _, file := range src.Files {
		assert.NotContains(t, string(file.Data), "root:", file.Name)
		assert.NotEqual(t, "apps/web/passwd.yaml", file.Name)
	}
	fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main, Path: "../x"}), inputsOf(), sourcefailure.ReasonSourceInvalid)

	// A file too large under the path fails; elsewhere it is left out.
	small, _ := newFetcher(t, func(o *Options) { o.MaxArtifactBytes = 100 << 10 })
	ferr = fetchErr(t, small, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main, Path: "big"}), inputsOf(), sourcefailure.ReasonArtifactTooLarge)
	assert.Contains(t, ferr.Message, "file big/blob.yaml is 204800 bytes")
	src, err = small.Fetch(ctx, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main, Path: "apps/api"}), inputsOf())
	require.NoError(t, err)
	assert.Equal(t, []string{"big/blob.yaml"}, src.Omitted)
	assert.Equal(t, []string{"apps/api/cm.yaml", "apps/web/cm.yaml"}, fileNames(src))
	tiny, _ := newFetcher(t, func(o *Options) { o.MaxGitBytes = 50 << 10 })
	ferr = fetchErr(t, tiny, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main}), inputsOf(), sourcefailure.ReasonArtifactTooLarge)
	assert.Contains(t, ferr.Message, "--max-git-bytes")
	fewRefs, _ := newFetcher(t, func(o *Options) { o.MaxGitRefs = 1 })
	fetchErr(t, fewRefs, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main}), inputsOf(), sourcefailure.ReasonGitRefsTooMany)

	g.server.SetDown(true)
	down, _ := newFetcher(t)
	fetchErr(t, down, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main}), inputsOf(), sourcefailure.ReasonSourceUnreachable)
	g.server.SetDown(false)

	g.server.SetDelay(time.Minute)
	slow, _ := newFetcher(t, func(o *Options) { o.Timeout = time.Second })
	fetchErr(t, slow, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main}), inputsOf(), sourcefailure.ReasonFetchTimeout)
	g.server.SetDelay(0)

	// A redirect to another host (another port of 127.0.0.1) is refused.
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, g.server.URL+"/apps.git"+strings.TrimPrefix(r.URL.RequestURI(), "/apps.git"), http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	g.server.Reset()
	ferr = fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: redirect.URL + "/apps.git", Ref: main}), inputsOf(), sourcefailure.ReasonSourceInvalid)
	assert.Contains(t, ferr.Message, "redirected to another host")
	assert.Empty(t, g.server.Requests())

	// Plain http off the development flag, and an address the policy
	// refuses (--deny-cidr): no request reaches the server.
	strict := NewFetcher(Options{Policy: egress.AddressPolicy{}, Timeout: 5 * time.Second})
	loopbackOnly(t, strict)
	fetchErr(t, strict, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main}), inputsOf(), sourcefailure.ReasonSourceInvalid)
	denied := NewFetcher(Options{Policy: egress.AddressPolicy{AllowLoopback: true, Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, Timeout: 5 * time.Second})
	loopbackOnly(t, denied)
	fetchErr(t, denied, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: main}), inputsOf(), egress.ReasonAddressNotAllowed)
	assert.Empty(t, g.server.Requests())

	for _, u := range []string{"file:///etc", "git://127.0.0.1/apps.git", "https://bob:pw@127.0.0.1/apps.git", "ssh://git:pw@127.0.0.1/apps.git", "http://127.0.0.1"} {
		ferr := fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: u, Ref: main}), inputsOf(), sourcefailure.ReasonSourceInvalid)
		assert.NotContains(t, ferr.Message, "pw", u)
	}
}

// SSH through the Fetcher: identity and known_hosts from the Secret; a
// known_hosts that lists another key for the host is refused before any
// git-upload-pack runs; no known_hosts is refused before dialing.
func TestGitSSH(t *testing.T) {
	root := t.TempDir()
	g := startGitIn(t, root, gitserver.Options{})
	commit := g.commit(t, "main", map[string]string{"app/deploy.yaml": "kind: Deployment"})
	srv, creds := sshServer(t, gitserver.SSHOptions{Root: root})
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	other, err := ssh.NewSignerFromKey(otherKey)
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		knownHosts []byte
		reason     string
	}{
		{"matching host key", srv.KnownHosts(), ""},
		{"mismatched host key", []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.Addr)}, other.PublicKey()) + "\n"), sourcefailure.ReasonGitHostKeyRefused},
		{"no known_hosts", nil, credentials.ReasonCredentialsInvalid},
		{"known_hosts of another host", []byte(knownhosts.Line([]string{"git.example.com"}, other.PublicKey()) + "\n"), credentials.ReasonCredentialsInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newFetcher(t)
			sessions := srv.Sessions()
			data := map[string][]byte{"identity": creds.Data["identity"]}
			if tc.knownHosts != nil {
				data["known_hosts"] = tc.knownHosts
			}
			rel := gitRelease(convoyv1alpha1.GitRepositorySource{URL: srv.RepoURL("apps.git"), Ref: convoyv1alpha1.GitReference{Branch: "main"},
				SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ssh"}})
			inputs := inputsOf(secret("ssh", corev1.SecretTypeOpaque, data))
			if tc.reason != "" {
				fetchErr(t, f, rel, inputs, tc.reason)
				assert.Equal(t, sessions, srv.Sessions(), "no git-upload-pack ran")
				return
			}
			src, err := f.Fetch(context.Background(), rel, inputs)
			require.NoError(t, err)
			assert.Equal(t, commit, src.Resolved.Commit)
			assert.NotEmpty(t, src.Files)
		})
	}
}
