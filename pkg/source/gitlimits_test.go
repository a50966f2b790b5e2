package source

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// hostileSSH serves, over OpenSSH's sshd, a git-upload-pack that advertises
// refs of nameLen bytes without end, and returns a Release of it with its
// Secret.
func hostileSSH(t *testing.T, nameLen int) (*convoyv1alpha1.Release, Inputs) {
	t.Helper()
	endless, err := gitserver.EndlessRefs(t.TempDir(), nameLen)
	require.NoError(t, err)
	srv, creds := sshServer(t, gitserver.SSHOptions{Root: t.TempDir(), UploadPack: endless})
	return gitRelease(convoyv1alpha1.GitRepositorySource{URL: srv.RepoURL("apps.git"), Ref: convoyv1alpha1.GitReference{Branch: "main"},
		SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "creds"}}), inputsOf(creds)
}

// An SSH server that advertises refs without end is stopped at the first
// ref past --max-git-refs (short names) or the first byte past
// --max-git-bytes (long names), with the limit's reason, long before the
// fetch timeout.
func TestGitSSHLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nameLen int
		opts    func(*Options)
		reason  string
		message string
	}{
		{"refs", 16, func(o *Options) { o.MaxGitRefs = 1000 }, sourcefailure.ReasonGitRefsTooMany, "advertises more than 1000 refs, the limit (--max-git-refs)"},
		{"bytes", 60000, func(o *Options) { o.MaxGitRefs, o.MaxGitBytes = 1_000_000, 2<<20 }, sourcefailure.ReasonArtifactTooLarge, "is larger than the limit of 2097152 bytes (--max-git-bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, inputs := hostileSSH(t, tc.nameLen)
			f, _ := newFetcher(t, tc.opts, func(o *Options) { o.Timeout = 2 * time.Minute })
			ferr := fetchErr(t, f, release, inputs, tc.reason)
			assert.Contains(t, ferr.Message, tc.message)
		})
	}
}

// Over HTTPS too, the refs are counted as the advertisement arrives.
func TestGitHTTPRefsCountedAsTheyArrive(t *testing.T) {
	g := startGit(t, gitserver.Options{})
	commit := g.commit(t, "main", map[string]string{"cm.yaml": "kind: ConfigMap"})
	for i := range 20 {
		require.NoError(t, g.repo.Tag(fmt.Sprintf("v0.0.%d", i), commit))
	}
	f, _ := newFetcher(t, func(o *Options) { o.MaxGitRefs = 10 })
	ferr := fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}}), inputsOf(), sourcefailure.ReasonGitRefsTooMany)
	assert.Contains(t, ferr.Message, "advertises more than 10 refs, the limit (--max-git-refs): stopped at the first past it")
}
