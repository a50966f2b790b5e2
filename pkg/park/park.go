// Package park lets a pass of the observer's loops hand off a wait that it
// would otherwise spend on its worker: a request to a registry or a
// repository, which a tenant's server may hold open up to the fetch timeout
// (docs/contributors/decisions.md, "Fair loops").
//
// A pass carries its Release's Spot in its context (WithSpot). A request that
// has not ended within the Spot's grace parks: the pass ends with ErrParked,
// the request goes on without it, and its result is kept on the Spot; the
// Spot's wake, called when the request ends, starts the Release's next pass,
// which finds the result there (Wait) instead of asking again. A caller
// without a Spot (a subresource, a test) waits as long as its context lets
// it.
package park

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// DefaultGrace is how long a pass of the loops waits for a request before it
// parks: a registry or a repository that answers at all answers a HEAD, an
// index or a small download well within it, and a worker is held that long
// at most by a request that never ends.
const DefaultGrace = time.Second

// ErrParked ends a pass that handed a wait off to its Spot: the pass did not
// run to its end, wrote nothing, and runs again when the wait ends.
var ErrParked = errors.New("parked: the pass waits for a request to a registry or a repository without its worker, and runs again when it ends")

// Spot is what one Release's passes park on. It is safe for concurrent use:
// the goroutines of parked waits deliver their results while a pass runs.
type Spot struct {
	grace time.Duration
	wake  func()

	mu sync.Mutex
	// parked is set once the current pass parked: it starts no other
	// request and waits for none.
	parked bool
	// waiting counts the parked waits that have not ended.
	waiting int
	// results are those of the waits that ended, by key, kept until a pass
	// runs to its end: every step of the next pass that asks for the same
	// request gets the same answer, an error too. A pass that parks keeps
	// only those it used (used), so that a Release whose spec changes
	// between passes does not pile up results no pass asks for.
	results map[string]singleflight.Result
	used    map[string]bool
}

// NewSpot returns a Spot whose passes wait grace at most for a request, and
// whose parked waits call wake when they end.
func NewSpot(grace time.Duration, wake func()) *Spot {
	return &Spot{grace: grace, wake: wake}
}

type spotKey struct{}

// WithSpot returns ctx with the Spot its pass parks on.
func WithSpot(ctx context.Context, s *Spot) context.Context {
	return context.WithValue(ctx, spotKey{}, s)
}

// from returns the Spot of ctx, nil when there is none.
func from(ctx context.Context) *Spot {
	s, _ := ctx.Value(spotKey{}).(*Spot)
	return s
}

// Begin starts a pass on s: it may park once.
func (s *Spot) Begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parked = false
	clear(s.used)
}

// End records that a pass ran to its end: the results it could use are
// dropped (the next pass asks again). It returns whether no wait is left,
// so that the owner of s may drop it.
func (s *Spot) End() (idle bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results, s.used = nil, nil
	return s.waiting == 0
}

// Waiting tells whether a parked wait of s has not ended.
func (s *Spot) Waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting > 0
}

// Wait returns the result of the request key. Without a Spot in ctx it calls
// start and waits for the result until ctx ends (the error is then ctx's
// cause). With one, it returns the result a parked wait of key delivered to
// the Spot, if any, without calling start; ErrParked without calling start
// when the pass already parked; else it calls start and waits for the
// Spot's grace at most, then parks: ErrParked, and the result goes to the
// Spot when it comes.
//
// start returns the channel of the request's result (singleflight's
// DoChan); the request must end on its own, within a bound of its own.
func Wait(ctx context.Context, key string, start func() <-chan singleflight.Result) (singleflight.Result, error) {
	s := from(ctx)
	if s == nil {
		ch := start()
		select {
		case res := <-ch:
			return res, nil
		case <-ctx.Done():
			return singleflight.Result{}, context.Cause(ctx)
		}
	}
	s.mu.Lock()
	res, ok := s.results[key]
	if ok {
		if s.used == nil {
			s.used = map[string]bool{}
		}
		s.used[key] = true
	}
	parked := s.parked
	s.mu.Unlock()
	switch {
	case ok:
		return res, nil
	case parked:
		return singleflight.Result{}, ErrParked
	}
	ch := start()
	grace := time.NewTimer(s.grace)
	defer grace.Stop()
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		return singleflight.Result{}, context.Cause(ctx)
	case <-grace.C:
	}
	s.mu.Lock()
	s.parked = true
	s.waiting++
	for k := range s.results {
		if !s.used[k] {
			delete(s.results, k)
		}
	}
	s.mu.Unlock()
	go func() {
		res := <-ch
		s.mu.Lock()
		if s.results == nil {
			s.results = map[string]singleflight.Result{}
		}
		s.results[key] = res
		s.waiting--
		s.mu.Unlock()
		s.wake()
	}()
	return singleflight.Result{}, ErrParked
}
