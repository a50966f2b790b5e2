package source

import (
	"context"
	"errors"
	"time"

	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/flight"
	"github.com/kumodo/convoy-apiserver/pkg/helmrepo"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// shared runs fn once for the callers that ask for the same key at the same
// time (flight.Group: callers of one namespace while the request waits for
// its slot, of any namespace once it runs), when the caches are on: a fleet
// of Releases of one tag whose resolution just expired sends one HEAD, not
// one per worker; a cold cache downloads a blob once. Keys hold the
// credentials' key wherever the answer depends on them. With the caches off
// every caller runs fn, in a request of its own. fn runs in a slot of
// namespace (the namespace of the Release that started the request), on a
// context of its own bounded by the fetch timeout; a caller with a
// park.Spot in its context (a drift pass) parks after its grace
// (park.ErrParked). The errors of the flight are the reasons of sources.
func (f *Fetcher) shared(ctx context.Context, namespace, key string, fn func(context.Context) (any, error)) (any, error) {
	v, err := f.flights.Do(ctx, namespace, key, func(ctx context.Context) (any, error) {
		v, err := fn(ctx)
		if err != nil {
			// Its callers may not have reached their own timeout yet.
			err = f.timedOut(ctx, err)
		}
		return v, err
	})
	var slotErr *flight.SlotError
	var waitErr *flight.WaitError
	switch {
	case errors.Is(err, park.ErrParked):
		return nil, err
	case errors.As(err, &slotErr) && slotErr.Namespace != "":
		return nil, failure.New(sourcefailure.ReasonFetchTimeout, slotErr.Err,
			"waiting for one of the fetches of namespace %s running now (--max-concurrent-fetches-per-namespace)", slotErr.Namespace)
	case errors.As(err, &slotErr):
		return nil, failure.New(sourcefailure.ReasonFetchTimeout, slotErr.Err, "waiting for one of the fetches running now (--max-concurrent-fetches)")
	case errors.As(err, &waitErr):
		return nil, failure.New(sourcefailure.ReasonFetchTimeout, waitErr.Err, "waiting for the request to the registry or repository")
	case errors.Is(err, errFetchTimeout):
		// It waited for another namespace's request until its own timeout.
		return nil, failure.New(sourcefailure.ReasonFetchTimeout, nil, "fetching the source took longer than the fetch timeout of %s (--fetch-timeout) and was stopped", f.opts.Timeout)
	}
	return v, err
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

// freshKey is the context key of WithFreshAfter.
type freshKey struct{}

// WithFreshAfter asks the fetches of ctx to resolve sources with what was
// read from the registry or repository at t or later (a tag's digest, a
// Helm index, a Git listing), whatever ResolveMaxAge: a refresh requested
// at t. What they read is kept for the others as usual; a request to the
// same registry or repository already in flight for another refresh is
// joined. A t in the future is taken as now.
func WithFreshAfter(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, freshKey{}, t)
}

// freshAfter is the time of WithFreshAfter (capped at now), or zero.
func (f *Fetcher) freshAfter(ctx context.Context) time.Time {
	t, _ := ctx.Value(freshKey{}).(time.Time)
	if now := f.opts.Clock.Now(); t.After(now) {
		return now
	}
	return t
}

// freshFlight keeps a refresh's requests apart from the ones in flight for
// passes that may use older reads.
func freshFlight(since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return "\x00fresh"
}

// getResolution is the digest a tag (OCI) was resolved to for key (URL,
// tag, credentials), within ResolveMaxAge, read at since or later.
func (f *Fetcher) getResolution(key string, since time.Time) (string, bool) {
	if f.resolutions == nil {
		return "", false
	}
	return f.resolutions.GetSince(key, since)
}

func (f *Fetcher) putResolution(key, digest string) {
	if f.resolutions != nil {
		f.resolutions.Put(key, digest)
	}
}

// getIndex is the index of a Helm repository fetched with key (URL,
// credentials), within ResolveMaxAge.
func (f *Fetcher) getIndex(key string, since time.Time) (*helmrepo.Index, bool) {
	if f.indexes == nil {
		return nil, false
	}
	return f.indexes.GetSince(key, since)
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
