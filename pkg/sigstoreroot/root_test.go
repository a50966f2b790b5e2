package sigstoreroot

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/theupdateframework/go-tuf/v2/metadata"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kumodo/convoy-apiserver/internal/cosigner"
)

// tufRepo is a TUF repository of one target, trusted_root.json, in a
// directory served by net/http's file server on loopback (consistent
// snapshots, as Sigstore's).
type tufRepo struct {
	dir      string
	srv      *httptest.Server
	rootJSON []byte

	mu       sync.Mutex
	requests []string
	down     bool
}

func newTUFRepo(t *testing.T, target []byte) *tufRepo {
	t.Helper()
	r := &tufRepo{dir: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(r.dir, "targets"), 0o755))
	expires := time.Now().Add(24 * time.Hour)
	root := metadata.Root(expires)
	signers := map[string]signature.Signer{}
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		_, priv, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		key, err := metadata.KeyFromPublicKey(priv.Public())
		require.NoError(t, err)
		require.NoError(t, root.Signed.AddKey(key, role))
		signers[role], err = signature.LoadSigner(priv, crypto.Hash(0))
		require.NoError(t, err)
	}
	targets := metadata.Targets(expires)
	tf, err := metadata.TargetFile().FromBytes(Target, target, "sha256")
	require.NoError(t, err)
	targets.Signed.Targets[Target] = tf
	snapshot := metadata.Snapshot(expires)
	timestamp := metadata.Timestamp(expires)
	_, err = root.Sign(signers["root"])
	require.NoError(t, err)
	_, err = targets.Sign(signers["targets"])
	require.NoError(t, err)
	_, err = snapshot.Sign(signers["snapshot"])
	require.NoError(t, err)
	_, err = timestamp.Sign(signers["timestamp"])
	require.NoError(t, err)
	require.NoError(t, root.ToFile(filepath.Join(r.dir, "1.root.json"), false))
	require.NoError(t, targets.ToFile(filepath.Join(r.dir, "1.targets.json"), false))
	require.NoError(t, snapshot.ToFile(filepath.Join(r.dir, "1.snapshot.json"), false))
	require.NoError(t, timestamp.ToFile(filepath.Join(r.dir, "timestamp.json"), false))
	sum := sha256.Sum256(target)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "targets", hex.EncodeToString(sum[:])+"."+Target), target, 0o644))
	r.rootJSON, err = root.ToBytes(false)
	require.NoError(t, err)

	files := http.FileServer(http.Dir(r.dir))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.URL.Path)
		down := r.down
		r.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tufRepo) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// served is how many requests the repository had, and forgets them.
func (r *tufRepo) served() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.requests)
	r.requests = nil
	return n
}

func trustedRoot(t *testing.T) []byte {
	t.Helper()
	s, err := cosigner.NewSigstore()
	require.NoError(t, err)
	data, err := s.TrustedRoot(cosigner.RootOptions{})
	require.NoError(t, err)
	return data
}

// The trust root is fetched once, through TUF, on first use, in memory
// only; it is fetched again in the background once older than Refresh,
// callers keeping the copy meanwhile and after a failure.
func TestRootFetchAndRefresh(t *testing.T) {
	// Nothing is read from or written to the disk: not the working
	// directory, not $HOME (sigstore-go's default cache).
	home, work := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(work)

	target := trustedRoot(t)
	repo := newTUFRepo(t, target)
	clk := clocktesting.NewFakeClock(time.Now())
	r := New(Options{Client: repo.srv.Client(), Mirror: repo.srv.URL, TUFRoot: repo.rootJSON, Clock: clk, Refresh: time.Hour, RetryAfter: time.Minute})
	assert.Zero(t, repo.served(), "nothing fetched before it is needed")

	ctx := context.Background()
	tr, err := r.TrustRoot(ctx)
	require.NoError(t, err)
	sum := sha256.Sum256(target)
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), tr.Digest())
	assert.NotZero(t, repo.served())

	for range 10 {
		again, err := r.TrustRoot(ctx)
		require.NoError(t, err)
		assert.Same(t, tr, again)
	}
	assert.Zero(t, repo.served(), "kept in memory")

	// Older than Refresh, the repository down: the copy is kept.
	repo.setDown(true)
	clk.Step(2 * time.Hour)
	again, err := r.TrustRoot(ctx)
	require.NoError(t, err)
	assert.Same(t, tr, again)
	waitFetched(t, r)
	assert.NotZero(t, repo.served(), "a refresh was tried")
	_, err = r.TrustRoot(ctx)
	require.NoError(t, err)
	waitFetched(t, r)
	assert.Zero(t, repo.served(), "not again within RetryAfter")

	// Up again, after RetryAfter: refreshed.
	repo.setDown(false)
	clk.Step(2 * time.Minute)
	_, err = r.TrustRoot(ctx)
	require.NoError(t, err)
	waitFetched(t, r)
	assert.NotZero(t, repo.served())
	r.mu.Lock()
	assert.Equal(t, clk.Now(), r.fetched)
	r.mu.Unlock()

	for _, dir := range []string{home, work} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "nothing written in %s", dir)
	}
}

func waitFetched(t *testing.T, r *Root) {
	t.Helper()
	r.mu.Lock()
	wait := r.inflight
	r.mu.Unlock()
	if wait != nil {
		<-wait
	}
}

// A first fetch that fails is an error, not tried again within
// RetryAfter; a target that is not the one TUF's metadata names is
// refused.
func TestRootFailures(t *testing.T) {
	ctx := context.Background()
	target := trustedRoot(t)

	t.Run("repository down", func(t *testing.T) {
		repo := newTUFRepo(t, target)
		repo.setDown(true)
		clk := clocktesting.NewFakeClock(time.Now())
		r := New(Options{Client: repo.srv.Client(), Mirror: repo.srv.URL, TUFRoot: repo.rootJSON, Clock: clk})
		_, err := r.TrustRoot(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), repo.srv.URL)
		assert.NotZero(t, repo.served())
		_, err = r.TrustRoot(ctx)
		require.Error(t, err)
		assert.Zero(t, repo.served(), "not again within RetryAfter")
	})

	t.Run("tampered target", func(t *testing.T) {
		repo := newTUFRepo(t, target)
		sum := sha256.Sum256(target)
		path := filepath.Join(repo.dir, "targets", hex.EncodeToString(sum[:])+"."+Target)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(target), "https", "httpx", 1)), 0o644))
		r := New(Options{Client: repo.srv.Client(), Mirror: repo.srv.URL, TUFRoot: repo.rootJSON})
		_, err := r.TrustRoot(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), Target)
	})

	t.Run("another TUF root", func(t *testing.T) {
		repo := newTUFRepo(t, target)
		other := newTUFRepo(t, target)
		r := New(Options{Client: repo.srv.Client(), Mirror: repo.srv.URL, TUFRoot: other.rootJSON})
		_, err := r.TrustRoot(ctx)
		require.Error(t, err)
	})

	t.Run("no client: nothing dialed", func(t *testing.T) {
		_, err := New(Options{Mirror: "https://127.0.0.1:1"}).TrustRoot(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no HTTP client")
	})

	t.Run("caller gives up", func(t *testing.T) {
		block := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
		defer srv.Close()
		defer close(block)
		r := New(Options{Client: srv.Client(), Mirror: srv.URL, TUFRoot: newTUFRepo(t, target).rootJSON, Timeout: time.Minute})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := r.TrustRoot(cctx)
		require.ErrorIs(t, err, context.Canceled)
	})
}
