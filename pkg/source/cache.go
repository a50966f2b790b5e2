package source

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/helmrepo"
	"github.com/kumodo/convoy-apiserver/pkg/park"
)

// shared runs fn once for the callers that ask for the same key at the same
// time, when the caches are on: a fleet of Releases of one tag whose
// resolution just expired sends one HEAD, not one per worker; a cold cache
// downloads a blob once. fn runs with a context of its own, bounded by the
// fetch timeout but not cancelled with the first caller's (a /diff whose
// client went away does not fail the loops waiting for the same request);
// each caller stops waiting when its own context ends. A panic of fn is
// that fetch's InternalError, never the process's. Keys hold the
// credentials' key wherever the answer depends on them. With the caches off
// every caller runs fn, in a request of its own.
//
// fn runs in a slot of namespace (the namespace of the Release that
// started the request), taken by the request, not by its callers: a shared
// request whose callers all gave up keeps its slot to its end. A request
// still waiting for its slot is shared by the callers of its namespace
// only: a caller of another namespace that joined it would wait for a slot
// of the first, which a tenant whose registries never answer holds. Once
// it holds its slot and runs, any caller of the same key joins it,
// whatever its namespace (running): a fleet spread over many namespaces
// sends one request, not one per worker.
//
// A caller with a park.Spot in its context (a pass of the drift loop)
// waits for the request, its slot included, for the Spot's grace at most,
// then parks: it gets park.ErrParked, and the result goes to the Spot
// (park.Wait), so that a registry that never answers holds no worker of
// the loop.
func (f *Fetcher) shared(ctx context.Context, namespace, key string, fn func(context.Context) (any, error)) (any, error) {
	flight := namespace + "\x00" + key
	if f.contents == nil {
		flight += "\x00" + strconv.FormatUint(f.solo.Add(1), 10)
	}
	res, err := park.Wait(ctx, key, func() <-chan singleflight.Result {
		if f.contents != nil {
			if ch := f.running.join(key); ch != nil {
				return ch
			}
		}
		return f.flights.DoChan(flight, func() (v any, err error) {
			// Not its first caller's: neither its cancellation nor its Spot.
			fctx, cancel := context.WithTimeoutCause(context.WithoutCancel(park.WithSpot(ctx, nil)), f.opts.Timeout, errFetchTimeout)
			defer cancel()
			defer func() {
				if r := recover(); r != nil {
					v, err = nil, failure.Recovered(fctx, r)
				}
			}()
			release, err := f.slots.acquire(fctx, namespace)
			if err != nil {
				return nil, err
			}
			defer release()
			run := func() (any, error) {
				v, err := fn(fctx)
				if err != nil {
					// Its callers may not have reached their own timeout yet.
					err = f.timedOut(fctx, err)
				}
				return v, err
			}
			if f.contents == nil {
				return run()
			}
			return f.running.do(fctx, key, run)
		})
	})
	switch {
	case errors.Is(err, park.ErrParked):
		return nil, err
	case err != nil:
		return nil, failure.New(ReasonFetchTimeout, err, "waiting for the request to the registry or repository")
	}
	return res.Val, res.Err
}

// countLookup counts a lookup of the Fetcher's content cache (CacheSource) or
// of its caches of resolutions (CacheResolve) when the caches are on, and
// returns hit: callers count the lookup that decides whether to go to the
// network, not the one repeated inside the shared request.
func (f *Fetcher) countLookup(cache string, hit bool) bool {
	if f.contents != nil {
		agecache.CountLookup(cache, hit)
	}
	return hit
}

// The caches of a Fetcher: each getter misses and each setter does nothing
// when the caches are off (Options.CacheBytes < 0).

// getResolution is the digest a tag (OCI) was resolved to for key (URL,
// tag, credentials), within ResolveMaxAge.
func (f *Fetcher) getResolution(key string) (string, bool) {
	if f.resolutions == nil {
		return "", false
	}
	return f.resolutions.Get(key)
}

func (f *Fetcher) putResolution(key, digest string) {
	if f.resolutions != nil {
		f.resolutions.Put(key, digest)
	}
}

// getIndex is the index of a Helm repository fetched with key (URL,
// credentials), within ResolveMaxAge.
func (f *Fetcher) getIndex(key string) (*helmrepo.Index, bool) {
	if f.indexes == nil {
		return nil, false
	}
	return f.indexes.Get(key)
}

func (f *Fetcher) putIndex(key string, idx *helmrepo.Index) {
	if f.indexes != nil {
		f.indexes.Put(key, idx)
	}
}

// contentKey is the key of the content cache: where an artifact was
// downloaded from (an OCI registry's host and repository, a Helm chart's
// URL) and its digest. A digest alone is what a tenant's registry or index
// claims, and digests are not secret: a registry that answers a HEAD of its
// own tag with the digest of another tenant's chart, or an index that lists
// that chart's digest at a URL of its own, must get a download from its own
// origin (which fails: not found, or bytes of another digest), never the
// other tenant's artifact.
func contentKey(origin, digest string) string { return origin + "@" + digest }

// getContent is the artifact of key (contentKey), verified when it was
// fetched.
func (f *Fetcher) getContent(key string) (*artifact, bool) {
	if f.contents == nil {
		return nil, false
	}
	return f.contents.Get(key)
}

func (f *Fetcher) putContent(key string, a *artifact) {
	if f.contents != nil {
		f.contents.Put(key, a)
	}
}

// isConfirmed says whether the registry or repository let the credentials
// of key read the artifact of key within ResolveMaxAge.
func (f *Fetcher) isConfirmed(key string) bool {
	if f.confirmed == nil {
		return false
	}
	_, ok := f.confirmed.Get(key)
	return ok
}

func (f *Fetcher) confirm(key string) {
	if f.confirmed != nil {
		f.confirmed.Put(key, true)
	}
}

// runningCalls are the shared requests that hold their slot, by key: the
// ones a caller of any namespace may join (shared).
type runningCalls struct {
	mu    sync.Mutex
	calls map[string]*runningCall
}

type runningCall struct {
	done chan struct{}
	res  singleflight.Result
}

// join returns a channel that receives the result of the request running
// for key, or nil when none runs.
func (r *runningCalls) join(key string) <-chan singleflight.Result {
	r.mu.Lock()
	c := r.calls[key]
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	ch := make(chan singleflight.Result, 1)
	go func() {
		<-c.done
		ch <- singleflight.Result{Val: c.res.Val, Err: c.res.Err, Shared: true}
	}()
	return ch
}

// do runs fn for key, or, when a request of another namespace runs for key
// already (it took its slot while this one waited for its own), waits for
// that one's result instead, until ctx ends. A panic of fn is its callers'
// InternalError, the joiners' too.
func (r *runningCalls) do(ctx context.Context, key string, fn func() (any, error)) (v any, err error) {
	r.mu.Lock()
	if c := r.calls[key]; c != nil {
		r.mu.Unlock()
		select {
		case <-c.done:
			return c.res.Val, c.res.Err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if r.calls == nil {
		r.calls = map[string]*runningCall{}
	}
	c := &runningCall{done: make(chan struct{})}
	r.calls[key] = c
	r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			c.res.Val, c.res.Err = nil, failure.Recovered(ctx, p)
		}
		r.finish(key, c)
		v, err = c.res.Val, c.res.Err
	}()
	c.res.Val, c.res.Err = fn()
	return c.res.Val, c.res.Err
}

func (r *runningCalls) finish(key string, c *runningCall) {
	r.mu.Lock()
	if r.calls[key] == c {
		delete(r.calls, key)
	}
	r.mu.Unlock()
	close(c.done)
}
