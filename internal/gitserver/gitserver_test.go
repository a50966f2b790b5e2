package gitserver

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// submoduleSHA is the commit of the submodule entry of appsTree (it need not
// exist).
const submoduleSHA = "1111111111111111111111111111111111111111"

// appsTree has nested files, a symbolic link and a submodule.
var appsTree = Tree{
	Files: map[string]string{
		"README.md":                "# apps\n",
		"base/kustomization.yaml":  "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":         "kind: Deployment\n",
		"overlays/prod/patch.yaml": "replicas: 3\n",
		".gitmodules":              "[submodule \"vendor/lib\"]\n\tpath = vendor/lib\n\turl = https://example.invalid/lib.git\n",
	},
	Symlinks:   map[string]string{"current": "overlays/prod"},
	Submodules: map[string]string{"vendor/lib": submoduleSHA},
}

// cli runs the real git CLI in dir (when set) with no config but the
// command line's, no prompt and no proxy, and returns its combined output.
func cli(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), "HOME="+t.TempDir(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustCLI is cli that must succeed, and its output without the trailing
// newline.
func mustCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := cli(t, dir, args...)
	require.NoError(t, err, out)
	return strings.TrimSuffix(out, "\n")
}

// serve makes root/apps.git with appsTree on main and serves root.
func serve(t *testing.T, opts Options) (*Server, *Repo, string) {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	repo, err := InitBare(opts.Root, "apps.git")
	require.NoError(t, err)
	sha, err := repo.Commit("main", appsTree, "apps")
	require.NoError(t, err)
	s, err := Start(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s, repo, sha
}

// get is an HTTP GET straight to the server (no proxy).
func get(t *testing.T, u string) *http.Response {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

func TestCommitWritesNestedTree(t *testing.T) {
	repo, err := InitBare(t.TempDir(), "apps.git")
	require.NoError(t, err)
	sha, err := repo.Commit("main", appsTree, "apps")
	require.NoError(t, err)

	assert.Equal(t, "true", mustCLI(t, "", "--git-dir", repo.Dir, "rev-parse", "--is-bare-repository"))
	assert.Equal(t, sha, mustCLI(t, "", "--git-dir", repo.Dir, "rev-parse", "main"))
	assert.Equal(t, "refs/heads/main", mustCLI(t, "", "--git-dir", repo.Dir, "symbolic-ref", "HEAD"))

	lines := strings.Split(mustCLI(t, "", "--git-dir", repo.Dir, "ls-tree", "-r", "--format=%(objectmode) %(objecttype) %(path)", sha), "\n")
	assert.Equal(t, []string{
		"100644 blob .gitmodules",
		"100644 blob README.md",
		"100644 blob base/deploy.yaml",
		"100644 blob base/kustomization.yaml",
		"120000 blob current",
		"100644 blob overlays/prod/patch.yaml",
		"160000 commit vendor/lib",
	}, lines)
	assert.Equal(t, "replicas: 3", mustCLI(t, "", "--git-dir", repo.Dir, "cat-file", "blob", sha+":overlays/prod/patch.yaml"))
	assert.Equal(t, "overlays/prod", mustCLI(t, "", "--git-dir", repo.Dir, "cat-file", "blob", sha+":current"))
	assert.Equal(t, submoduleSHA, mustCLI(t, "", "--git-dir", repo.Dir, "rev-parse", sha+":vendor/lib"))
	assert.Equal(t, "Convoy Test <test@convoy.invalid> 1704067200 +0000 apps",
		mustCLI(t, "", "--git-dir", repo.Dir, "log", "-1", "--format=%an <%ae> %at %ad %s", "--date=format:%z", sha))
	mustCLI(t, "", "--git-dir", repo.Dir, "fsck", "--strict", "--no-dangling")
}

func TestCommitIsDeterministic(t *testing.T) {
	commit := func(r *Repo, tree Tree, message string) string {
		t.Helper()
		sha, err := r.Commit("main", tree, message)
		require.NoError(t, err)
		return sha
	}
	root := t.TempDir()
	a, err := InitBare(root, "a.git")
	require.NoError(t, err)
	b, err := InitBare(root, "b.git")
	require.NoError(t, err)

	first := commit(a, appsTree, "apps")
	assert.Equal(t, first, commit(b, appsTree, "apps"), "the same tree and message in another repository")

	// On the same branch, the next commit has the tip as its parent.
	second := commit(a, appsTree, "apps")
	assert.NotEqual(t, first, second)
	assert.Equal(t, first, mustCLI(t, "", "--git-dir", a.Dir, "rev-parse", second+"^"))

	// The first commit of another branch has no parent.
	sha, err := a.Commit("other", appsTree, "apps")
	require.NoError(t, err)
	assert.Equal(t, first, sha)

	tests := []struct {
		name    string
		tree    Tree
		message string
		author  Signature
	}{
		{name: "another file", tree: Tree{Files: map[string]string{"README.md": "# apps\n"}}, message: "apps"},
		{name: "another message", tree: appsTree, message: "apps, again"},
		{name: "another author", tree: appsTree, message: "apps", author: Signature{Name: "Someone Else"}},
		{name: "another date", tree: appsTree, message: "apps", author: Signature{When: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := InitBare(root, fmt.Sprintf("other-%d.git", i))
			require.NoError(t, err)
			r.Author = tt.author
			assert.NotEqual(t, first, commit(r, tt.tree, tt.message))
		})
	}
}

func TestCommitRefusesBadTrees(t *testing.T) {
	tests := []struct {
		name string
		tree Tree
	}{
		{name: "parent directory", tree: Tree{Files: map[string]string{"../escape": "x"}}},
		{name: "absolute", tree: Tree{Files: map[string]string{"/etc/passwd": "x"}}},
		{name: "empty element", tree: Tree{Files: map[string]string{"a//b": "x"}}},
		{name: "dot", tree: Tree{Files: map[string]string{"a/./b": "x"}}},
		{name: "empty path", tree: Tree{Files: map[string]string{"": "x"}}},
		{name: "a file and a directory", tree: Tree{Files: map[string]string{"a": "x", "a/b": "y"}}},
		{name: "a file and a symlink", tree: Tree{Files: map[string]string{"a": "x"}, Symlinks: map[string]string{"a": "b"}}},
		{name: "a directory and a submodule", tree: Tree{Files: map[string]string{"a/b": "x"}, Submodules: map[string]string{"a": submoduleSHA}}},
		{name: "a bad submodule sha", tree: Tree{Submodules: map[string]string{"lib": "not-a-sha"}}},
	}
	repo, err := InitBare(t.TempDir(), "apps.git")
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := repo.Commit("main", tt.tree, "bad")
			require.Error(t, err)
			_, err = cli(t, "", "--git-dir", repo.Dir, "rev-parse", "--verify", "main")
			assert.Error(t, err, "no branch after a refused commit")
		})
	}
}

func TestInitBareRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "../apps.git", "/apps.git", "team/../apps.git", "./apps.git"} {
		t.Run(name, func(t *testing.T) {
			_, err := InitBare(t.TempDir(), name)
			assert.Error(t, err)
		})
	}
	repo, err := InitBare(t.TempDir(), "team/apps.git")
	require.NoError(t, err)
	assert.Equal(t, "team/apps.git", repo.Name)
	assert.DirExists(t, filepath.Join(repo.Dir, "objects"))
}

func TestTreeFromDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates", "empty"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("name: web\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "templates", "cm.yaml"), []byte("kind: ConfigMap\n"), 0o644))

	tree, err := TreeFromDir(dir)
	require.NoError(t, err)
	assert.Equal(t, Tree{Files: map[string]string{"Chart.yaml": "name: web\n", "templates/cm.yaml": "kind: ConfigMap\n"}}, tree)

	require.NoError(t, os.Symlink("Chart.yaml", filepath.Join(dir, "link")))
	_, err = TreeFromDir(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestCloneDepth1(t *testing.T) {
	for _, version := range []string{"0", "1", "2"} {
		t.Run("protocol v"+version, func(t *testing.T) {
			s, _, sha := serve(t, Options{})
			work := filepath.Join(t.TempDir(), "apps")
			mustCLI(t, "", "-c", "protocol.version="+version, "clone", "--quiet", "--depth", "1", s.RepoURL("apps.git"), work)

			for p, content := range appsTree.Files {
				data, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(p)))
				require.NoError(t, err, p)
				assert.Equal(t, content, string(data), p)
			}
			target, err := os.Readlink(filepath.Join(work, "current"))
			require.NoError(t, err)
			assert.Equal(t, "overlays/prod", target)
			assert.DirExists(t, filepath.Join(work, "vendor", "lib"), "a submodule is an empty directory until initialized")
			assert.Equal(t, sha, mustCLI(t, work, "rev-parse", "HEAD"))
			assert.Equal(t, "true", mustCLI(t, work, "rev-parse", "--is-shallow-repository"))

			assert.Equal(t, 1, s.Listings())
			assert.GreaterOrEqual(t, s.Fetches(), 1)
			for _, r := range s.Requests() {
				assert.Equal(t, http.StatusOK, r.Status, r)
				assert.Equal(t, ServiceUploadPack, r.Service, r)
				assert.False(t, r.Auth, r)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	s, _, _ := serve(t, Options{})
	url := s.RepoURL("apps.git")

	// Protocol v0, what go-git speaks: a listing is one GET, a full clone
	// one GET and one POST.
	mustCLI(t, "", "-c", "protocol.version=0", "ls-remote", url)
	assert.Equal(t, 1, s.Listings())
	assert.Equal(t, 0, s.Fetches())
	mustCLI(t, "", "-c", "protocol.version=0", "clone", "--quiet", "--bare", url, filepath.Join(t.TempDir(), "apps.git"))
	assert.Equal(t, 2, s.Listings())
	assert.Equal(t, 1, s.Fetches())
	assert.Equal(t, []Request{
		{Method: http.MethodGet, Path: "/apps.git/info/refs", Service: ServiceUploadPack, Status: http.StatusOK},
		{Method: http.MethodGet, Path: "/apps.git/info/refs", Service: ServiceUploadPack, Status: http.StatusOK},
		{Method: http.MethodPost, Path: "/apps.git/git-upload-pack", Service: ServiceUploadPack, Status: http.StatusOK},
	}, s.Requests())

	s.Reset()
	assert.Empty(t, s.Requests())
	assert.Equal(t, 0, s.Listings())
	assert.Equal(t, 0, s.Fetches())

	// Protocol v2: ls-refs is a POST too.
	mustCLI(t, "", "-c", "protocol.version=2", "ls-remote", url)
	assert.Equal(t, 1, s.Listings())
	assert.Equal(t, 1, s.Fetches())

	// A dumb-protocol GET is neither.
	s.Reset()
	assert.Equal(t, http.StatusOK, get(t, url+"/HEAD").StatusCode)
	assert.Equal(t, []Request{{Method: http.MethodGet, Path: "/apps.git/HEAD", Status: http.StatusOK}}, s.Requests())
	assert.Equal(t, 0, s.Listings()+s.Fetches())
}

func TestBasicAuth(t *testing.T) {
	s, _, sha := serve(t, Options{Username: "convoy", Password: "s3cret"})
	withCreds := func(user, pass string) string {
		u, err := url.Parse(s.RepoURL("apps.git"))
		require.NoError(t, err)
		u.User = url.UserPassword(user, pass)
		return u.String()
	}

	resp := get(t, s.RepoURL("apps.git")+"/info/refs?service=git-upload-pack")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Basic realm="gitserver"`, resp.Header.Get("WWW-Authenticate"))

	tests := []struct {
		name   string
		url    string
		ok     bool
		want   Request
		status int
	}{
		{name: "no credentials", url: s.RepoURL("apps.git"),
			want: Request{Method: http.MethodGet, Path: "/apps.git/info/refs", Service: ServiceUploadPack, Status: http.StatusUnauthorized}},
		{name: "a wrong password", url: withCreds("convoy", "wrong"),
			want: Request{Method: http.MethodGet, Path: "/apps.git/info/refs", Service: ServiceUploadPack, Auth: true, User: "convoy", Status: http.StatusUnauthorized}},
		{name: "a wrong user", url: withCreds("other", "s3cret"),
			want: Request{Method: http.MethodGet, Path: "/apps.git/info/refs", Service: ServiceUploadPack, Auth: true, User: "other", Status: http.StatusUnauthorized}},
		{name: "the right credentials", url: withCreds("convoy", "s3cret"), ok: true,
			want: Request{Method: http.MethodGet, Path: "/apps.git/info/refs", Service: ServiceUploadPack, Auth: true, User: "convoy", Status: http.StatusOK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Reset()
			out, err := cli(t, "", "-c", "protocol.version=0", "ls-remote", tt.url, "main")
			if tt.ok {
				require.NoError(t, err, out)
				assert.Equal(t, sha+"\trefs/heads/main\n", out)
			} else {
				require.Error(t, err)
				assert.NotContains(t, out, sha)
			}
			reqs := s.Requests()
			require.NotEmpty(t, reqs)
			assert.Equal(t, tt.want, reqs[len(reqs)-1])
		})
	}
}

func TestSetDown(t *testing.T) {
	s, _, _ := serve(t, Options{})
	url := s.RepoURL("apps.git")

	s.SetDown(true)
	assert.Equal(t, http.StatusServiceUnavailable, get(t, url+"/info/refs?service=git-upload-pack").StatusCode)
	out, err := cli(t, "", "ls-remote", url)
	require.Error(t, err)
	assert.Contains(t, out, "503")
	for _, r := range s.Requests() {
		assert.Equal(t, http.StatusServiceUnavailable, r.Status)
	}

	s.SetDown(false)
	mustCLI(t, "", "ls-remote", url)
}

func TestDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	s, _, _ := serve(t, Options{Delay: delay})
	start := time.Now()
	mustCLI(t, "", "-c", "protocol.version=0", "ls-remote", s.RepoURL("apps.git"))
	assert.GreaterOrEqual(t, time.Since(start), delay)

	// Close does not wait for a delay to pass: the request gets 503.
	s.SetDelay(time.Hour)
	done := make(chan int)
	go func() {
		client := &http.Client{Transport: &http.Transport{}}
		resp, err := client.Get(s.RepoURL("apps.git") + "/info/refs?service=git-upload-pack")
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	require.Eventually(t, func() bool { return len(s.Requests()) == 2 }, 10*time.Second, 5*time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the delay")
	}
	assert.Equal(t, http.StatusServiceUnavailable, <-done)
}

func TestTags(t *testing.T) {
	s, repo, sha := serve(t, Options{})
	require.NoError(t, repo.Tag("v1.0.0", sha))
	require.NoError(t, repo.AnnotatedTag("v2.0.0", sha, "release 2\n"))
	assert.Error(t, repo.Tag("v1.0.0", sha), "a tag is not moved")

	tagSHA := mustCLI(t, "", "--git-dir", repo.Dir, "rev-parse", "v2.0.0")
	assert.NotEqual(t, sha, tagSHA)
	assert.Equal(t, "tag", mustCLI(t, "", "--git-dir", repo.Dir, "cat-file", "-t", tagSHA))
	assert.Contains(t, mustCLI(t, "", "--git-dir", repo.Dir, "cat-file", "tag", tagSHA),
		"tagger Convoy Test <test@convoy.invalid> 1704067200 +0000\n\nrelease 2")

	out := mustCLI(t, "", "-c", "protocol.version=0", "ls-remote", "--tags", s.RepoURL("apps.git"))
	assert.Equal(t, strings.Join([]string{
		sha + "\trefs/tags/v1.0.0",
		tagSHA + "\trefs/tags/v2.0.0",
		sha + "\trefs/tags/v2.0.0^{}",
	}, "\n"), out)

	// The same annotated tag of the same commit elsewhere is the same object.
	other, err := InitBare(t.TempDir(), "other.git")
	require.NoError(t, err)
	otherSHA, err := other.Commit("main", appsTree, "apps")
	require.NoError(t, err)
	require.Equal(t, sha, otherSHA)
	require.NoError(t, other.AnnotatedTag("v2.0.0", sha, "release 2\n"))
	assert.Equal(t, tagSHA, mustCLI(t, "", "--git-dir", other.Dir, "rev-parse", "v2.0.0"))
}

func TestSetConfigAllowReachableSHA1InWant(t *testing.T) {
	s, repo, first := serve(t, Options{})
	_, err := repo.Commit("main", Tree{Files: map[string]string{"README.md": "moved on\n"}}, "second")
	require.NoError(t, err)

	fetch := func() (string, error) {
		work := t.TempDir()
		mustCLI(t, work, "init", "--quiet")
		return cli(t, work, "-c", "protocol.version=0", "fetch", "--depth", "1", s.RepoURL("apps.git"), first)
	}
	// Protocol v0 wants only the tips unless the repository allows more.
	out, err := fetch()
	require.Error(t, err, out)
	require.NoError(t, repo.SetConfig("uploadpack.allowReachableSHA1InWant", "true"))
	out, err = fetch()
	require.NoError(t, err, out)
}

func TestChunkedRequestBody(t *testing.T) {
	s, repo, _ := serve(t, Options{})
	// Enough branches that the wants of a clone pass http.postBuffer, so
	// that git sends them chunked.
	var stream strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&stream, "commit refs/heads/b%04d\ncommitter A <a@example.invalid> 0 +0000\ndata 5\nc%04d\n\n", i, i)
	}
	_, err := repo.git([]byte(stream.String()), "fast-import", "--quiet")
	require.NoError(t, err)

	mustCLI(t, "", "-c", "protocol.version=0", "-c", "http.postBuffer=65536", "clone", "--quiet", "--bare", s.RepoURL("apps.git"), filepath.Join(t.TempDir(), "apps.git"))
	for _, r := range s.Requests() {
		assert.Equal(t, http.StatusOK, r.Status, r)
	}
}

func TestProcessEnvironmentDoesNotApply(t *testing.T) {
	// A user config, config on the environment and a GIT_DIR that would
	// each hide or break main, were they to reach git.
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[uploadpack]\n\thiderefs = refs/heads\n[init]\n\tdefaultBranch = trunk\n"), 0o644))
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'uploadpack.hiderefs'='refs/tags'")
	t.Setenv("GIT_DIR", filepath.Join(home, "nowhere"))
	t.Setenv("GIT_AUTHOR_NAME", "Someone Else")

	s, repo, sha := serve(t, Options{})
	assert.Equal(t, "refs/heads/main", mustCLI(t, "", "--git-dir", repo.Dir, "symbolic-ref", "HEAD"))
	assert.Equal(t, "Convoy Test", mustCLI(t, "", "--git-dir", repo.Dir, "log", "-1", "--format=%an", sha))
	require.NoError(t, repo.Tag("v1", sha))
	out := mustCLI(t, "", "-c", "protocol.version=0", "ls-remote", s.RepoURL("apps.git"))
	assert.Contains(t, out, sha+"\trefs/heads/main")
	assert.Contains(t, out, sha+"\trefs/tags/v1")
}

// StartRepo serves the one repository it creates.
func TestStartRepo(t *testing.T) {
	repo, s, err := StartRepo(Options{Root: t.TempDir()}, "one.git")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	sha, err := repo.Commit("main", Tree{Files: map[string]string{"a.yaml": "a: b\n"}}, "first")
	require.NoError(t, err)
	out, err := exec.Command("git", "ls-remote", s.RepoURL("one.git"), "refs/heads/main").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), sha)
	_, _, err = StartRepo(Options{Root: t.TempDir()}, "../escape.git")
	assert.Error(t, err)
}
