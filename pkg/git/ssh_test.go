package git

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// gitSSHTestTimeout bounds the handshakes of the tests' transports.
const gitSSHTestTimeout = 20 * time.Second

// loopbackDialer is the dialer of policy, that refuses besides anything off
// 127.0.0.0/8 and ::1 (no test sends a packet off loopback) and counts the
// addresses it was asked for.
func loopbackDialer(policy egress.AddressPolicy, dialed *int) *net.Dialer {
	d := policy.Dialer(gitSSHTestTimeout)
	var mu sync.Mutex
	d.Control = func(network, address string, c syscall.RawConn) error {
		if dialed != nil {
			mu.Lock()
			*dialed++
			mu.Unlock()
		}
		if err := policy.Control(network, address, c); err != nil {
			return err
		}
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().Unmap().IsLoopback() {
			return fmt.Errorf("test: %s is off loopback", address)
		}
		return nil
	}
	return d
}

// installGitSSH installs this package's transports (once per process:
// go-git's table of protocols is global); each call then carries its
// connection settings in an Auth (sshAuth).
func installGitSSH() { install() }

// sshAuth is the gitAuth of auth (an SSHAuth, passed as it is otherwise)
// with a dialer that allows loopback only.
func sshAuth(auth transport.AuthMethod) transport.AuthMethod {
	var a *SSHAuth
	switch v := auth.(type) {
	case SSHAuth:
		a = &v
	case *SSHAuth:
		a = v
	default:
		return auth
	}
	return &Auth{SSH: a, Dialer: loopbackDialer(egress.AddressPolicy{AllowLoopback: true}, nil), Timeout: gitSSHTestTimeout}
}

// gitRun runs git with args in dir, without the user's or the system's
// configuration, at fixed dates, and returns its trimmed output.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_AUTHOR_NAME=Convoy", "GIT_AUTHOR_EMAIL=convoy@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME=Convoy", "GIT_COMMITTER_EMAIL=convoy@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// makeBareRepo creates the bare repository root/name with two commits on
// main, the second tagged v1, and returns the hashes of the commits.
func makeBareRepo(t *testing.T, root, name string) (first, second string) {
	t.Helper()
	repo := filepath.Join(root, name)
	work := t.TempDir()
	gitRun(t, root, "init", "--bare", "--quiet", "--initial-branch=main", repo)
	commit := func(files map[string]string, msg string) string {
		for path, content := range files {
			require.NoError(t, os.MkdirAll(filepath.Join(work, filepath.Dir(path)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(work, path), []byte(content), 0o644))
		}
		gitRun(t, work, "--git-dir="+repo, "--work-tree="+work, "add", "--all")
		gitRun(t, work, "--git-dir="+repo, "--work-tree="+work, "commit", "--quiet", "-m", msg)
		return gitRun(t, work, "--git-dir="+repo, "rev-parse", "HEAD")
	}
	first = commit(map[string]string{"app/deploy.yaml": "kind: Deployment\n"}, "first")
	second = commit(map[string]string{"app/deploy.yaml": "kind: Deployment\nmetadata: {name: web}\n", "README": "web\n"}, "second")
	gitRun(t, work, "--git-dir="+repo, "tag", "v1")
	return first, second
}

// gitSSHFixture is a server with one repository and a client key it
// authorizes.
type gitSSHFixture struct {
	srv           *gitserver.SSHServer
	auth          SSHAuth
	clientKey     ed25519.PrivateKey
	first, second string
}

// newGitSSHFixture serves the repositories web.git and o'neil!.git (a name
// that needs git's quoting) to a new ed25519 key.
func newGitSSHFixture(t *testing.T) *gitSSHFixture {
	t.Helper()
	root := t.TempDir()
	first, second := makeBareRepo(t, root, "web.git")
	makeBareRepo(t, root, "o'neil!.git")
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	srv := gitserver.RequireSSH(t, gitserver.SSHOptions{Root: root, AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}})
	return &gitSSHFixture{srv: srv, auth: SSHAuth{Signer: signer, KnownHosts: srv.KnownHosts()}, clientKey: key, first: first, second: second}
}

func newTestSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return signer
}

// listRefs lists the references of url through go-git's Remote.
func listRefs(ctx context.Context, url string, auth transport.AuthMethod) (map[string]string, error) {
	installGitSSH()
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: sshAuth(auth)})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			out[r.Name().String()] = r.Hash().String()
		}
	}
	return out, nil
}

func TestGitSSHListsReferences(t *testing.T) {
	fx := newGitSSHFixture(t)
	ctx := context.Background()
	for _, name := range []string{"web.git", "o'neil!.git"} {
		t.Run(name, func(t *testing.T) {
			refs, err := listRefs(ctx, fx.srv.RepoURL(name), fx.auth)
			require.NoError(t, err)
			assert.Contains(t, refs, "refs/heads/main")
			assert.Contains(t, refs, "refs/tags/v1")
			if name == "web.git" {
				assert.Equal(t, fx.second, refs["refs/heads/main"])
			}
		})
	}
	assert.Equal(t, 2, fx.srv.Sessions())
}

func TestGitSSHClonesShallow(t *testing.T) {
	installGitSSH()
	fx := newGitSSHFixture(t)
	storage := memory.NewStorage()
	repo, err := gogit.CloneContext(context.Background(), storage, nil, &gogit.CloneOptions{
		URL: fx.srv.RepoURL("web.git"), Auth: sshAuth(&fx.auth), Depth: 1, SingleBranch: true,
		ReferenceName: plumbing.NewBranchReferenceName("main"), Tags: gogit.NoTags,
	})
	require.NoError(t, err)
	head, err := repo.Head()
	require.NoError(t, err)
	assert.Equal(t, fx.second, head.Hash().String())
	commit, err := repo.CommitObject(head.Hash())
	require.NoError(t, err)
	file, err := commit.File("app/deploy.yaml")
	require.NoError(t, err)
	content, err := file.Contents()
	require.NoError(t, err)
	assert.Equal(t, "kind: Deployment\nmetadata: {name: web}\n", content)

	// Depth 1: the parent is not fetched.
	shallow, err := storage.Shallow()
	require.NoError(t, err)
	assert.Equal(t, []plumbing.Hash{plumbing.NewHash(fx.second)}, shallow)
	_, err = repo.CommitObject(plumbing.NewHash(fx.first))
	assert.ErrorIs(t, err, plumbing.ErrObjectNotFound)
	assert.Equal(t, 1, fx.srv.Sessions())
}

// otherAuth is an AuthMethod of another transport.
type otherAuth struct{}

func (otherAuth) Name() string   { return "http-basic-auth" }
func (otherAuth) String() string { return "http-basic-auth" }

// Refusals: each fails before git-upload-pack runs on the server, most
// before a packet is sent.
func TestGitSSHRefusals(t *testing.T) {
	fx := newGitSSHFixture(t)
	url := fx.srv.RepoURL("web.git")
	_, port, err := net.SplitHostPort(fx.srv.Addr)
	require.NoError(t, err)

	otherHostKey := newTestSigner(t).PublicKey()
	ecdsaKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecdsaSigner, err := ssh.NewSignerFromKey(ecdsaKey)
	require.NoError(t, err)
	line := func(host string, key ssh.PublicKey) []byte {
		return []byte(knownhosts.Line([]string{host}, key) + "\n")
	}
	with := func(change func(*SSHAuth)) SSHAuth {
		a := fx.auth
		change(&a)
		return a
	}

	tests := []struct {
		name   string
		policy egress.AddressPolicy
		auth   transport.AuthMethod
		url    string
		// dials is whether the dialer is asked for an address.
		dials bool
		check func(t *testing.T, err error)
	}{{
		name: "a host key other than known_hosts lists for the host",
		auth: with(func(a *SSHAuth) { a.KnownHosts = line("[127.0.0.1]:"+port, otherHostKey) }),
		url:  url, dials: true,
		check: func(t *testing.T, err error) {
			var keyErr *knownhosts.KeyError
			require.ErrorAs(t, err, &keyErr)
			assert.NotEmpty(t, keyErr.Want)
			assert.Contains(t, err.Error(), "host key mismatch for 127.0.0.1:"+port)
			assert.Contains(t, err.Error(), ssh.FingerprintSHA256(fx.srv.HostKey))
		},
	}, {
		name: "known_hosts lists a key of another type: the server may not offer its own",
		auth: with(func(a *SSHAuth) { a.KnownHosts = line("[127.0.0.1]:"+port, ecdsaSigner.PublicKey()) }),
		url:  url, dials: true,
		check: func(t *testing.T, err error) {
			var negotiation *ssh.AlgorithmNegotiationError
			require.ErrorAs(t, err, &negotiation)
			assert.ErrorContains(t, err, "the SSH server 127.0.0.1:"+port+" offers no host key of the types known_hosts lists for it (it offers ssh-ed25519)")
		},
	}, {
		name: "known_hosts lists the key for the host on port 22 only",
		auth: with(func(a *SSHAuth) { a.KnownHosts = line("127.0.0.1", fx.srv.HostKey) }),
		url:  url,
		check: func(t *testing.T, err error) {
			assert.ErrorContains(t, err, "known_hosts has no host key for 127.0.0.1:"+port+` (write it "[127.0.0.1]:`+port+`")`)
		},
	}, {
		name: "empty known_hosts",
		auth: with(func(a *SSHAuth) { a.KnownHosts = []byte("\n") }),
		url:  url,
		check: func(t *testing.T, err error) {
			assert.ErrorContains(t, err, "known_hosts is empty")
		},
	}, {
		name: "no known_hosts",
		auth: with(func(a *SSHAuth) { a.KnownHosts = nil }),
		url:  url,
		check: func(t *testing.T, err error) {
			assert.ErrorContains(t, err, "known_hosts is empty")
		},
	}, {
		name: "known_hosts that does not parse",
		auth: with(func(a *SSHAuth) { a.KnownHosts = []byte("[127.0.0.1]:" + port + " ssh-ed25519 !!!\n") }),
		url:  url,
		check: func(t *testing.T, err error) {
			assert.ErrorContains(t, err, "known_hosts is not valid: line 1: ")
		},
	}, {
		name: "an AuthMethod of another transport",
		auth: otherAuth{},
		url:  url,
		check: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, transport.ErrInvalidAuthMethod)
		},
	}, {
		name: "no AuthMethod",
		url:  url,
		check: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, transport.ErrInvalidAuthMethod)
		},
	}, {
		name:   "the address policy refuses loopback",
		policy: egress.AddressPolicy{},
		auth:   fx.auth,
		url:    url, dials: true,
		check: func(t *testing.T, err error) {
			f, ok := failure.Find(err, egress.ReasonAddressNotAllowed)
			require.True(t, ok, "%v", err)
			var refused *egress.AddressNotAllowedError
			require.ErrorAs(t, f, &refused)
			assert.Equal(t, egress.WhyLoopback, refused.Why)
			assert.Equal(t, fx.srv.Addr, refused.Address)
		},
	}, {
		name: "a key the server does not authorize",
		auth: with(func(a *SSHAuth) { a.Signer = newTestSigner(t) }),
		url:  url, dials: true,
		check: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, transport.ErrAuthenticationRequired)
			assert.ErrorContains(t, err, `refused user "`+fx.srv.User()+`" with key `)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := tt.policy
			if tt.name != "the address policy refuses loopback" {
				policy.AllowLoopback = true
			}
			dialed := 0
			tr := newSSHTransport(loopbackDialer(policy, &dialed), gitSSHTestTimeout, Limits{})
			ep, err := transport.NewEndpoint(tt.url)
			require.NoError(t, err)
			before := fx.srv.Sessions()
			sess, err := tr.NewUploadPackSession(ep, tt.auth)
			if err == nil {
				_, err = sess.AdvertisedReferencesContext(context.Background())
				require.NoError(t, sess.Close())
			}
			require.Error(t, err)
			t.Log(err)
			tt.check(t, err)
			assert.Equal(t, tt.dials, dialed > 0, "dialed")
			assert.Equal(t, before, fx.srv.Sessions(), "git-upload-pack ran")
		})
	}
}

// The errors go-git's callers tell apart come through go-git's Remote as
// its transport errors.
func TestGitSSHErrorsThroughGoGit(t *testing.T) {
	fx := newGitSSHFixture(t)
	ctx := context.Background()

	_, err := listRefs(ctx, fx.srv.RepoURL("missing.git"), fx.auth)
	t.Log(err)
	assert.ErrorIs(t, err, transport.ErrRepositoryNotFound)
	assert.ErrorContains(t, err, "does not appear to be a git repository")

	_, err = listRefs(ctx, fx.srv.RepoURL("web.git"), SSHAuth{Signer: newTestSigner(t), KnownHosts: fx.auth.KnownHosts})
	assert.ErrorIs(t, err, transport.ErrAuthenticationRequired)

	wrongHost := fx.auth
	wrongHost.KnownHosts = []byte(knownhosts.Line([]string{knownhosts.Normalize(fx.srv.Addr)}, newTestSigner(t).PublicKey()) + "\n")
	_, err = listRefs(ctx, fx.srv.RepoURL("web.git"), wrongHost)
	var keyErr *knownhosts.KeyError
	assert.ErrorAs(t, err, &keyErr)

	// A path out of the root: the server refuses it, which is no missing
	// repository.
	_, err = listRefs(ctx, fx.srv.RepoURL("../web.git"), fx.auth)
	require.Error(t, err)
	t.Log(err)
	assert.NotErrorIs(t, err, transport.ErrRepositoryNotFound)
	assert.ErrorContains(t, err, "is not a path under the root")
	assert.ErrorContains(t, err, "exit status 128")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = listRefs(canceled, fx.srv.RepoURL("web.git"), fx.auth)
	assert.ErrorIs(t, err, context.Canceled)

	// The missing repository ran git-upload-pack; nothing else did.
	assert.Equal(t, 1, fx.srv.Sessions())
}

// An empty repository is go-git's ErrEmptyRemoteRepository.
func TestGitSSHEmptyRepository(t *testing.T) {
	fx := newGitSSHFixture(t)
	root := t.TempDir()
	gitRun(t, root, "init", "--bare", "--quiet", filepath.Join(root, "empty.git"))
	srv := gitserver.RequireSSH(t, gitserver.SSHOptions{Root: root, AuthorizedKeys: []ssh.PublicKey{fx.auth.Signer.PublicKey()}})
	auth := fx.auth
	auth.KnownHosts = srv.KnownHosts()
	_, err := listRefs(context.Background(), srv.RepoURL("empty.git"), auth)
	assert.ErrorIs(t, err, transport.ErrEmptyRemoteRepository)
}

func TestGitSSHReceivePackUnsupported(t *testing.T) {
	tr := newSSHTransport(loopbackDialer(egress.AddressPolicy{AllowLoopback: true}, nil), time.Second, Limits{})
	ep, err := transport.NewEndpoint("ssh://git@127.0.0.1:22/web.git")
	require.NoError(t, err)
	_, err = tr.NewReceivePackSession(ep, SSHAuth{})
	assert.ErrorIs(t, err, errors.ErrUnsupported)
}

func TestGitShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/web.git":        `'/web.git'`,
		"org/repo.git":    `'org/repo.git'`,
		"/o'neil!.git":    `'/o'\''neil'\!'.git'`,
		"/a b;$(x)`y`":    "'/a b;$(x)`y`'",
		"/d\"q\\x.git":    `'/d"q\x.git'`,
		"":                `''`,
		"/semi;colon.git": `'/semi;colon.git'`,
	} {
		assert.Equal(t, want, shellQuote(in), in)
	}
}

// SSHAuth from a Secret's keys, and what it prints: never the key.
func TestSSHAuth(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	identity := pem.EncodeToMemory(block)
	encBlock, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	require.NoError(t, err)
	pub, err := ssh.NewPublicKey(priv.Public())
	require.NoError(t, err)
	knownHosts := []byte(knownhosts.Line([]string{"git.example.com"}, pub) + "\n")

	auth, err := NewSSHAuth(identity, knownHosts)
	require.NoError(t, err)
	assert.Equal(t, pub.Marshal(), auth.Signer.PublicKey().Marshal())
	auth.User = "deploy"
	for _, s := range []string{fmt.Sprint(auth), fmt.Sprint(*auth), fmt.Sprintf("%+v", *auth), fmt.Sprintf("%#v", *auth), fmt.Sprintf("%#v", auth)} {
		assert.Contains(t, s, ssh.FingerprintSHA256(pub))
		assert.Contains(t, s, `user="deploy"`)
		assert.NotContains(t, s, string(block.Bytes))
		assert.NotContains(t, s, fmt.Sprint([]byte(priv)))
		assert.NotContains(t, s, fmt.Sprintf("%x", []byte(priv.Seed())))
	}
	assert.Equal(t, sshAuthName, auth.Name())

	for name, tc := range map[string]struct {
		identity, knownHosts []byte
		want                 string
	}{
		"encrypted key":   {pem.EncodeToMemory(encBlock), knownHosts, "encrypted with a passphrase"},
		"not a key":       {[]byte("-----BEGIN NOTHING-----\n-----END NOTHING-----\n"), knownHosts, "not a private key"},
		"no known_hosts":  {identity, nil, "known_hosts is empty"},
		"bad known_hosts": {identity, []byte("git.example.com ssh-ed25519 AAAA\n"), "known_hosts is not valid"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewSSHAuth(tc.identity, tc.knownHosts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// A server that accepts and says nothing: the handshake ends at the
// transport's timeout, or at the end of the caller's context.
func TestGitSSHSilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	hostKey := newTestSigner(t).PublicKey()
	auth := SSHAuth{Signer: newTestSigner(t), KnownHosts: []byte(knownhosts.Line([]string{knownhosts.Normalize(l.Addr().String())}, hostKey) + "\n")}
	ep, err := transport.NewEndpoint("ssh://git@" + l.Addr().String() + "/web.git")
	require.NoError(t, err)
	session := func(timeout time.Duration) transport.UploadPackSession {
		tr := newSSHTransport(loopbackDialer(egress.AddressPolicy{AllowLoopback: true}, nil), timeout, Limits{})
		s, err := tr.NewUploadPackSession(ep, auth)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}

	start := time.Now()
	_, err = session(200 * time.Millisecond).AdvertisedReferencesContext(context.Background())
	assert.ErrorContains(t, err, "did not end within 200ms")
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = session(time.Minute).AdvertisedReferencesContext(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 20*time.Second)
}

// The address dialed and checked against known_hosts is the URL's host and
// port (22 by default), an IPv6 address's brackets once.
func TestGitSSHSessionAddress(t *testing.T) {
	key := newTestSigner(t).PublicKey()
	tr := newSSHTransport(loopbackDialer(egress.AddressPolicy{AllowLoopback: true}, nil), time.Second, Limits{})
	for _, tc := range []struct{ url, knownHost, addr, user, command string }{
		{"ssh://git@[::1]:2222/x.git", "[::1]:2222", "[::1]:2222", "git", "git-upload-pack '/x.git'"},
		{"git@git.example.com:org/repo.git", "git.example.com", "git.example.com:22", "git", "git-upload-pack 'org/repo.git'"},
		{"ssh://git.example.com/org/r.git", "git.example.com", "git.example.com:22", "git", "git-upload-pack '/org/r.git'"},
		{"ssh://deploy@git.example.com:2222/r.git", "[git.example.com]:2222", "git.example.com:2222", "deploy", "git-upload-pack '/r.git'"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			ep, err := transport.NewEndpoint(tc.url)
			require.NoError(t, err)
			auth := SSHAuth{Signer: newTestSigner(t), KnownHosts: []byte(knownhosts.Line([]string{tc.knownHost}, key))}
			s, err := tr.NewUploadPackSession(ep, auth)
			require.NoError(t, err)
			got := s.(*sshSession)
			assert.Equal(t, tc.addr, got.addr)
			assert.Equal(t, tc.user, got.config.User)
			assert.Equal(t, tc.command, got.command)
			assert.Equal(t, []string{ssh.KeyAlgoED25519}, got.config.HostKeyAlgorithms)
			require.NoError(t, s.Close())
		})
	}
	ep, err := transport.NewEndpoint("ssh://git:secret@git.example.com/r.git")
	require.NoError(t, err)
	_, err = tr.NewUploadPackSession(ep, SSHAuth{Signer: newTestSigner(t), KnownHosts: []byte(knownhosts.Line([]string{"git.example.com"}, key))})
	assert.ErrorContains(t, err, "not a password")
}
