package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
)

// The tip of make run's branch signed verifies with the allowed_signers
// line local-up puts in demo/git-signers, as the principal it names; its
// parent, the files, is unsigned; the overlay is in the tree.
func TestSignBranch(t *testing.T) {
	for _, tool := range []string{"git", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	repo, err := gitserver.InitBare(t.TempDir(), "podinfo.git")
	require.NoError(t, err)
	tree := gitserver.Tree{Files: map[string]string{"overlays/prod/kustomization.yaml": "resources: []\n"}}
	signed, allowedSigners, err := signBranch(context.Background(), repo, tree)
	require.NoError(t, err)
	assert.NotContains(t, tree.Files, "overlays/signed/kustomization.yaml", "the caller's tree is left alone")

	cat := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"--git-dir", repo.Dir}, args...)...).Output()
		require.NoError(t, err, args)
		return string(out)
	}
	assert.Equal(t, signed, strings.TrimSpace(cat("rev-parse", "refs/heads/signed")))
	assert.Equal(t, signedOverlay, cat("show", "signed:overlays/signed/kustomization.yaml"))
	keys, err := gitverify.ParseKeys(map[string][]byte{"allowed_signers": allowedSigners}, gitverify.Limits{})
	require.NoError(t, err)

	for _, tc := range []struct {
		name, rev string
		kind      gitverify.Kind
	}{
		{"the tip, signed", "signed", 0},
		{"its parent, unsigned", "signed^", gitverify.KindUnsigned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.TrimSpace(cat("rev-parse", tc.rev))
			signer, err := gitverify.VerifyCommit(gitverify.Object{ID: id, Data: []byte(cat("cat-file", "commit", id))}, keys)
			if tc.kind != 0 {
				var gerr *gitverify.Error
				require.ErrorAs(t, err, &gerr)
				assert.Equal(t, tc.kind, gerr.Kind)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, gitverify.FormatSSH, signer.Format)
			assert.Equal(t, signedPrincipal, signer.Identity)
			assert.Equal(t, "allowed_signers", signer.Key)
		})
	}
}
