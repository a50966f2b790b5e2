package gitserver

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
)

// shortDir is a new directory of a short path (gpg-agent's socket is in
// gpg's home), removed after the test.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gv")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Commits and annotated tags signed by git's own signing, with keys of
// ssh-keygen and gpg, verify with gitverify by the public keys they give.
func TestSigning(t *testing.T) {
	for _, tc := range []struct{ name, kind, secretKey string }{
		{"ssh ed25519", "ed25519", "ci.pub"},
		{"ssh ecdsa", "ecdsa", "ci.pub"},
		{"ssh rsa", "rsa", "ci.pub"},
		{"openpgp", "", "ci.asc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortDir(t)
			var signing *Signing
			var pub []byte
			var err error
			if tc.kind == "" {
				signing, pub, err = NewOpenPGPSigning(dir, "Convoy Test", "test@convoy.invalid")
			} else {
				signing, pub, err = NewSSHSigning(dir, tc.kind)
			}
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, signing.Close()) })
			repo, err := InitBare(t.TempDir(), "apps.git")
			require.NoError(t, err)
			repo.Signing = signing
			sha, err := repo.Commit("main", Tree{Files: map[string]string{"a": "b"}}, "signed")
			require.NoError(t, err)
			require.NoError(t, repo.AnnotatedTag("v1", sha, "release v1\n"))
			commit, err := repo.git(nil, "cat-file", "commit", sha)
			require.NoError(t, err)
			tagID, err := repo.resolve("refs/tags/v1")
			require.NoError(t, err)
			tag, err := repo.git(nil, "cat-file", "tag", tagID)
			require.NoError(t, err)

			keys, err := gitverify.ParseKeys(map[string][]byte{tc.secretKey: pub}, gitverify.Limits{})
			require.NoError(t, err)
			verdict, err := gitverify.Check(gitverify.ModeTagAndHEAD, gitverify.Target{
				Ref:    "refs/tags/v1",
				Commit: gitverify.Object{ID: sha, Data: []byte(commit + "\n")},
				Tag:    &gitverify.Object{ID: tagID, Data: []byte(tag + "\n")},
			}, keys)
			require.NoError(t, err)
			assert.Equal(t, tc.secretKey, verdict.Commit.Key)
			assert.Equal(t, tc.secretKey, verdict.Tag.Key)
		})
	}
}
