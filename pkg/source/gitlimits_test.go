package source

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
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
		{"refs", 16, func(o *Options) { o.MaxGitRefs = 1000 }, ReasonGitRefsTooMany, "advertises more than 1000 refs, the limit (--max-git-refs)"},
		{"bytes", 60000, func(o *Options) { o.MaxGitRefs, o.MaxGitBytes = 1_000_000, 2<<20 }, ReasonArtifactTooLarge, "is larger than the limit of 2097152 bytes (--max-git-bytes)"},
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
	ferr := fetchErr(t, f, gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}}), inputsOf(), ReasonGitRefsTooMany)
	assert.Contains(t, ferr.Message, "advertises more than 10 refs, the limit (--max-git-refs): stopped at the first past it")
}

// The counter counts pkt-lines, whatever the sizes of the reads: a flush,
// a delimiter and a response end count none; a length that is not a
// pkt-line's stops the counting (the decoder refuses it).
func TestRefCounter(t *testing.T) {
	pkt := func(payload string) string { return fmt.Sprintf("%04x%s", 4+len(payload), payload) }
	ref := pkt("0123456789abcdef0123456789abcdef01234567 refs/heads/main\n")
	service := pkt("# service=git-upload-pack\n") + "0000"
	for _, tc := range []struct {
		name       string
		input      string
		refs, more int
		fails      bool
	}{
		{"at the limit", strings.Repeat(ref, 5) + "0000", 5, 0, false},
		{"one past it", strings.Repeat(ref, 6) + "0000", 5, 0, true},
		{"smart HTTP's service line", service + strings.Repeat(ref, 5) + "0000", 5, 1, false},
		{"delimiters and ends count none", "0001" + "0002" + strings.Repeat(ref, 5) + "0000", 5, 0, false},
		{"not a length: left to the decoder", "zzzz" + strings.Repeat(ref, 50), 5, 0, false},
		{"a length below 4: left to the decoder", "0003" + strings.Repeat(ref, 50), 5, 0, false},
		{"no limit", strings.Repeat(ref, 50), 0, 0, false},
	} {
		for _, chunk := range []int{1, 3, 4096} {
			t.Run(fmt.Sprintf("%s, reads of %d", tc.name, chunk), func(t *testing.T) {
				out, err := io.ReadAll(gitRefsCounted(iotestChunks(tc.input, chunk), "repo", tc.refs, tc.more))
				if tc.fails {
					requireReasoned(t, err)
					assert.Equal(t, ReasonGitRefsTooMany, failureReason(err))
					assert.Less(t, len(out), len(tc.input), "stopped before the end")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.input, string(out))
			})
		}
	}
}

// iotestChunks reads s n bytes at a time at most.
func iotestChunks(s string, n int) io.Reader { return &chunks{s: s, n: n} }

type chunks struct {
	s string
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

func failureReason(err error) string {
	f, ok := failure.As(err)
	if !ok {
		return ""
	}
	return f.Reason
}

// FuzzRefCounter: any bytes read through the counter, in reads of any
// size, come out unchanged, or it fails with GitRefsTooMany after at most
// the bytes of the lines it allows; never a panic.
func FuzzRefCounter(f *testing.F) {
	f.Add([]byte("001e# service=git-upload-pack\n0000003d0123456789abcdef0123456789abcdef01234567 refs/heads/main\n0000"), uint8(1), uint8(7))
	f.Add([]byte("0004000400040004"), uint8(2), uint8(1))
	f.Add([]byte("fff0"), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, refs, chunk uint8) {
		out, err := io.ReadAll(gitRefsCounted(iotestChunks(string(data), int(chunk)%64+1), "repo", int(refs), 0))
		if err != nil {
			requireReasoned(t, err)
			require.Equal(t, ReasonGitRefsTooMany, failureReason(err))
			require.True(t, bytes.HasPrefix(data, out))
			return
		}
		require.Equal(t, data, out)
	})
}
