package git

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
)

// gitSigner signs commits and tags as a user does: git commit-tree -S and
// git tag -s, with ssh-keygen (gpg.format=ssh) or gpg.
type gitSigner struct {
	config []string // git -c options
	env    []string
	keys   map[string][]byte // the key Secret's data
	fp     string            // the fingerprint the verdict names
}

// requireTool skips t where name is not installed, but fails it under
// CI=true (hack/setup.sh installs it).
func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (hack/setup.sh installs it)", name)
		}
		t.Skipf("%s is not installed", name)
	}
}

// run runs a command with env and returns its standard output.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"HOME=" + t.TempDir(),
		"GIT_AUTHOR_NAME=Alice", "GIT_AUTHOR_EMAIL=alice@example.com", "GIT_AUTHOR_DATE=1704067200 +0000",
		"GIT_COMMITTER_NAME=Alice", "GIT_COMMITTER_EMAIL=alice@example.com", "GIT_COMMITTER_DATE=1704067200 +0000"}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v: %s", name, args, stderr.String())
	return string(out)
}

// sshGitSigner makes an SSH key of kind with ssh-keygen.
func sshGitSigner(t *testing.T, kind string) gitSigner {
	requireTool(t, "ssh-keygen")
	key := filepath.Join(t.TempDir(), "key")
	run(t, nil, "ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "alice@laptop", "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	require.NoError(t, err)
	// "256 SHA256:... alice@laptop (ED25519)", as a user checks it.
	fp := strings.Fields(run(t, nil, "ssh-keygen", "-l", "-f", key+".pub"))[1]
	return gitSigner{
		config: []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key},
		keys:   map[string][]byte{"allowed_signers": []byte("alice@example.com " + string(pub))},
		fp:     fp,
	}
}

// gpgGitSigner makes an OpenPGP key with gpg in a home of the test's, and
// stops its agent at the end.
func gpgGitSigner(t *testing.T) gitSigner {
	requireTool(t, "gpg")
	home, err := os.MkdirTemp("", "gnupg") // short: the agent's socket path is bounded
	require.NoError(t, err)
	require.NoError(t, os.Chmod(home, 0o700))
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		_ = os.RemoveAll(home)
	})
	run(t, env, "gpg", "--batch", "--passphrase", "", "--quick-gen-key", "Alice <alice@example.com>", "ed25519", "sign", "never")
	var fp string
	for line := range strings.Lines(run(t, env, "gpg", "--with-colons", "--list-keys")) {
		if f := strings.Split(line, ":"); f[0] == "fpr" && fp == "" {
			fp = f[9]
		}
	}
	return gitSigner{
		config: []string{"-c", "gpg.format=openpgp", "-c", "user.signingkey=" + fp},
		env:    env,
		keys:   map[string][]byte{"alice.asc": []byte(run(t, env, "gpg", "--armor", "--export", fp))},
		fp:     fp,
	}
}

// servedRepo is a repository apps.git served by git http-backend, whose
// main holds one commit, base (cm.yaml).
func servedRepo(t *testing.T) (*gitserver.Repo, *gitserver.Server, string) {
	t.Helper()
	root := t.TempDir()
	repo, err := gitserver.InitBare(root, "apps.git")
	require.NoError(t, err)
	base, err := repo.Commit("main", gitserver.Tree{Files: map[string]string{"cm.yaml": "kind: ConfigMap\n"}}, "base")
	require.NoError(t, err)
	s, err := gitserver.Start(gitserver.Options{Root: root})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return repo, s, base
}

func TestFetchObjectsSignedWithGit(t *testing.T) {
	signers := map[string]func(*testing.T) gitSigner{
		"ssh ed25519": func(t *testing.T) gitSigner { return sshGitSigner(t, "ed25519") },
		"ssh ecdsa":   func(t *testing.T) gitSigner { return sshGitSigner(t, "ecdsa") },
		"ssh rsa":     func(t *testing.T) gitSigner { return sshGitSigner(t, "rsa") },
		"openpgp":     gpgGitSigner,
	}
	for name, newSigner := range signers {
		t.Run(name, func(t *testing.T) {
			signer := newSigner(t)
			repo, s, base := servedRepo(t)

			git := func(args ...string) string {
				return run(t, signer.env, "git", append(append([]string{"--git-dir", repo.Dir}, signer.config...), args...)...)
			}
			tree := strings.TrimSpace(git("rev-parse", "main^{tree}"))
			commit := strings.TrimSpace(git("commit-tree", "-S", "-p", base, "-m", "signed", tree))
			git("update-ref", "refs/heads/main", commit)
			git("tag", "-s", "-m", "release v1", "v1", commit)
			git("tag", "-s", "-m", "release v0", "v0", base)
			git("tag", "light", commit)
			tagID := strings.TrimSpace(git("rev-parse", "refs/tags/v1"))

			keys, err := gitverify.ParseKeys(signer.keys, gitverify.Limits{})
			require.NoError(t, err)
			auth := &Auth{HTTPClient: HTTPClient(&http.Transport{}, Limits{Bytes: 10 << 20}), Limits: Limits{Bytes: 10 << 20}}
			fetchAt := func(ref, sha string, tip, objects bool) *Commit {
				t.Helper()
				c, err := Fetch(context.Background(), FetchRequest{URL: s.RepoURL("apps.git"), Auth: auth, Commit: sha, Ref: ref, Tip: tip, Objects: objects})
				require.NoError(t, err)
				return c
			}
			fetch := func(ref, sha string, objects bool) *Commit { return fetchAt(ref, sha, true, objects) }

			// Today's callers: no objects.
			assert.Nil(t, fetch("refs/heads/main", commit, false).Objects)

			// A branch: the commit, no tag.
			c := fetch("refs/heads/main", commit, true)
			require.NotNil(t, c.Objects)
			assert.Equal(t, git("cat-file", "commit", commit), string(c.Objects.Commit))
			assert.Empty(t, c.Objects.TagID)
			assert.Nil(t, c.Objects.Tag)
			v, err := gitverify.Check(gitverify.ModeHEAD, gitverify.Target{Ref: "refs/heads/main", Commit: gitverify.Object{ID: commit, Data: c.Objects.Commit}}, keys)
			require.NoError(t, err)
			assert.Equal(t, signer.fp, v.Commit.Fingerprint)

			// An annotated tag at depth 1 with NoTags: the tag object comes,
			// in the one fetch a branch costs (protocol v0: a listing and a
			// POST).
			s.Reset()
			c = fetch("refs/tags/v1", commit, true)
			assert.Equal(t, 1, s.Listings())
			assert.Equal(t, 1, s.Fetches())
			assert.Equal(t, tagID, c.Objects.TagID)
			assert.Equal(t, git("cat-file", "tag", tagID), string(c.Objects.Tag))
			target := gitverify.Target{Ref: "refs/tags/v1", Commit: gitverify.Object{ID: commit, Data: c.Objects.Commit},
				Tag: &gitverify.Object{ID: c.Objects.TagID, Data: c.Objects.Tag}}
			v, err = gitverify.Check(gitverify.ModeTagAndHEAD, target, keys)
			require.NoError(t, err)
			assert.Equal(t, signer.fp, v.Tag.Fingerprint)
			assert.Equal(t, signer.fp, v.Commit.Fingerprint)

			// The ref's history (a commit behind its tip): the tag too.
			c = fetchAt("refs/tags/v1", commit, false, true)
			assert.Equal(t, tagID, c.Objects.TagID)

			// The base commit is unsigned: its signed tag passes Tag, not
			// TagAndHEAD.
			c = fetch("refs/tags/v0", base, true)
			target = gitverify.Target{Ref: "refs/tags/v0", Commit: gitverify.Object{ID: base, Data: c.Objects.Commit},
				Tag: &gitverify.Object{ID: c.Objects.TagID, Data: c.Objects.Tag}}
			_, err = gitverify.Check(gitverify.ModeTag, target, keys)
			require.NoError(t, err)
			_, err = gitverify.Check(gitverify.ModeTagAndHEAD, target, keys)
			assert.ErrorContains(t, err, "is not signed")

			// A lightweight tag names the commit: no tag object.
			c = fetch("refs/tags/light", commit, true)
			assert.Empty(t, c.Objects.TagID)
			_, err = gitverify.Check(gitverify.ModeTag, gitverify.Target{Ref: "refs/tags/light", Commit: gitverify.Object{ID: commit, Data: c.Objects.Commit}}, keys)
			assert.ErrorContains(t, err, "refs/tags/light is a lightweight tag")
		})
	}
}

// A commit whose gpgsig header is 10 MiB is fetched in its time, its tree
// read without decoding the commit (go-git's decoder copies the header
// once per line: hours), and its object is what the fetch stored.
func TestFetchCommitOfHugeSignature(t *testing.T) {
	repo, s, base := servedRepo(t)
	raw := run(t, nil, "git", "--git-dir", repo.Dir, "cat-file", "commit", base)
	huge := strings.Replace(raw, "\n\n", "\ngpgsig -----BEGIN SSH SIGNATURE-----\n"+strings.Repeat(" "+strings.Repeat("A", 70)+"\n", 10<<20/72)+" -----END SSH SIGNATURE-----\n\n", 1)
	cmd := exec.Command("git", "--git-dir", repo.Dir, "hash-object", "-t", "commit", "-w", "--stdin")
	cmd.Stdin = strings.NewReader(huge)
	out, err := cmd.Output()
	require.NoError(t, err)
	sha := strings.TrimSpace(string(out))
	require.NoError(t, repo.SetRef("refs/heads/huge", sha))

	auth := &Auth{HTTPClient: HTTPClient(&http.Transport{}, Limits{Bytes: 64 << 20}), Limits: Limits{Bytes: 64 << 20}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Fetch(ctx, FetchRequest{URL: s.RepoURL("apps.git"), Auth: auth, Commit: sha, Ref: "refs/heads/huge", Tip: true, Objects: true})
	require.NoError(t, err)
	assert.Equal(t, huge, string(c.Objects.Commit))
	require.Len(t, c.Files, 1)
	assert.Equal(t, "cm.yaml", c.Files[0].Name)
}
