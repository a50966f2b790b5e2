// Package sigstoreroot keeps the public Sigstore instance's trust root
// (its trusted_root.json) in memory, fetched from its TUF repository with
// sigstore-go's TUF client, verified from the TUF root sigstore-go embeds:
// the one outbound connection of convoy-apiserver that no tenant chooses.
//
// It never reads or writes the server's disk or environment (sigstore-go's
// default options cache in $HOME and read TUF_ROOT; these do neither), and
// it reaches the repository only through the HTTP client it is given (the
// sources' address policy). It fetches on first use, not at start (a
// server without keyless Releases never dials), then again when its copy
// is older than Options.Refresh; a failed refresh keeps the copy it has
// and is tried again after Options.RetryAfter.
package sigstoreroot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sigstore/sigstore-go/pkg/tuf"
	"github.com/theupdateframework/go-tuf/v2/metadata/fetcher"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy-apiserver/pkg/cosign"
)

// Target is the TUF target of the trust root.
const Target = "trusted_root.json"

// Defaults of Options.
const (
	// DefaultMirror is the public instance's TUF repository.
	DefaultMirror     = tuf.DefaultMirror
	DefaultRefresh    = 24 * time.Hour
	DefaultRetryAfter = time.Minute
	DefaultTimeout    = 30 * time.Second
)

// Options of a Root.
type Options struct {
	// Client reaches the repository; required, so that no default client
	// (the environment's proxy, no address policy) is ever used (the
	// sources' client: their address
	// policy, no proxy of the environment).
	Client *http.Client
	// Mirror is the TUF repository's URL; empty: DefaultMirror.
	Mirror string
	// TUFRoot is the TUF root.json the repository's metadata is verified
	// from; empty: the public instance's, embedded in sigstore-go.
	TUFRoot []byte
	// Refresh is how old a copy may get before it is fetched again.
	Refresh time.Duration
	// RetryAfter is how long a failed fetch is not tried again (callers
	// in between get the copy, or the failure).
	RetryAfter time.Duration
	// Timeout bounds one fetch (the caller's context may end it sooner).
	Timeout time.Duration
	// Clock; nil: the real one.
	Clock clock.PassiveClock
	// Fetched, when set, is called after each fetch with its error (nil:
	// the root was fetched), for metrics.
	Fetched func(error)
}

// Root is the public trust root, kept in memory. Safe for concurrent use.
type Root struct {
	opts Options

	mu      sync.Mutex
	current *cosign.TrustRoot
	fetched time.Time
	failed  time.Time
	lastErr error
	// inflight is closed when the fetch in flight ends.
	inflight chan struct{}
}

// New returns a Root; nothing is fetched until TrustRoot is called.
func New(opts Options) *Root {
	if opts.Mirror == "" {
		opts.Mirror = DefaultMirror
	}
	if len(opts.TUFRoot) == 0 {
		opts.TUFRoot = tuf.DefaultRoot()
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Root{opts: opts}
}

// TrustRoot returns the trust root: the copy in memory, fetched again in
// the background once older than Refresh (callers keep the copy they
// have meanwhile, and after a failed refresh); before the first copy,
// callers wait for the one fetch in flight, within their context.
func (r *Root) TrustRoot(ctx context.Context) (*cosign.TrustRoot, error) {
	r.mu.Lock()
	now := r.opts.Clock.Now()
	if r.inflight == nil && (r.current == nil || now.Sub(r.fetched) >= r.opts.Refresh) &&
		(r.failed.IsZero() || now.Sub(r.failed) >= r.opts.RetryAfter) {
		r.inflight = make(chan struct{})
		go r.fetch(r.inflight)
	}
	if r.current != nil {
		tr := r.current
		r.mu.Unlock()
		return tr, nil
	}
	wait, lastErr := r.inflight, r.lastErr
	r.mu.Unlock()
	if wait == nil {
		// The last fetch failed within RetryAfter.
		return nil, lastErr
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the public Sigstore trust root from %s: %w", r.opts.Mirror, context.Cause(ctx))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		return r.current, nil
	}
	return nil, r.lastErr
}

// fetch fetches the trust root (on its own context: a caller that gives
// up does not cancel it for the others) and closes done.
func (r *Root) fetch(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	tr, err := r.download(ctx)
	if r.opts.Fetched != nil {
		r.opts.Fetched(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Clock.Now()
	if err != nil {
		r.failed, r.lastErr = now, err
		klog.ErrorS(err, "Fetching the public Sigstore trust root failed", "mirror", r.opts.Mirror, "keeping", r.current != nil)
	} else {
		r.current, r.fetched, r.failed, r.lastErr = tr, now, time.Time{}, nil
		klog.InfoS("Fetched the public Sigstore trust root", "mirror", r.opts.Mirror, "digest", tr.Digest())
	}
	r.inflight = nil
	close(done)
}

// download runs the TUF client: the repository's metadata from TUFRoot,
// then the trust root target, in memory only.
func (r *Root) download(ctx context.Context) (*cosign.TrustRoot, error) {
	if r.opts.Client == nil {
		return nil, errors.New("no HTTP client to reach the TUF repository with")
	}
	f := fetcher.NewDefaultFetcher() // one try: the next pass is the retry
	f.SetHTTPClient(ctxClient{ctx: ctx, c: r.opts.Client})
	c, err := tuf.New(&tuf.Options{
		Root:              r.opts.TUFRoot,
		RepositoryBaseURL: r.opts.Mirror,
		DisableLocalCache: true,
		Fetcher:           f,
		Context:           ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("updating the TUF metadata of %s: %w", r.opts.Mirror, err)
	}
	data, err := c.GetTarget(Target)
	if err != nil {
		return nil, fmt.Errorf("fetching %s from %s: %w", Target, r.opts.Mirror, err)
	}
	tr, err := cosign.ParseTrustRoot(data)
	if err != nil {
		return nil, fmt.Errorf("the %s of %s: %w", Target, r.opts.Mirror, err)
	}
	return tr, nil
}

// ctxClient binds a fetch's context to the TUF fetcher's requests (its
// interface takes none).
type ctxClient struct {
	ctx context.Context
	c   *http.Client
}

func (c ctxClient) Do(req *http.Request) (*http.Response, error) {
	return c.c.Do(req.WithContext(c.ctx))
}
