// Package flight shares the requests to registries and repositories among
// their concurrent callers, each request run in a slot of the namespace that
// started it, on a context of its own: a fleet of Releases of one tag whose
// resolution just expired sends one HEAD, and a tenant whose registry never
// answers holds its namespace's slots only. Who joins which request, and when
// a caller stops waiting or parks: docs/contributors/internals.md ("Sources").
package flight

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/park"
)

// Gauge is what the Group counts its requests with (a component-base
// gauge).
type Gauge interface {
	Inc()
	Dec()
}

// Options configure a Group.
type Options struct {
	// Slots is how many requests run at once, PerNamespace how many of
	// them the callers of one namespace start (at most Slots).
	Slots, PerNamespace int
	// Timeout bounds a request; TimeoutCause is its context's cause when
	// it runs out.
	Timeout      time.Duration
	TimeoutCause error
	// Solo gives every caller a request of its own (the caches are off).
	Solo bool
	// Running counts the requests that hold a slot, Waiting the ones
	// waiting for one.
	Running, Waiting Gauge
}

// Group is the requests in flight of a server. Its zero value is not
// usable: see New.
type Group struct {
	opts    Options
	slots   *slots
	pending singleflight.Group
	running runningCalls
	solo    atomic.Uint64
}

// New returns a Group.
func New(opts Options) *Group {
	return &Group{opts: opts, slots: newSlots(opts.Slots, opts.PerNamespace, opts.Running, opts.Waiting)}
}

// WaitError is a caller's context that ended while it waited for a
// request: its Err is the context's cause.
type WaitError struct{ Err error }

func (e *WaitError) Error() string { return fmt.Sprintf("waiting for the request: %v", e.Err) }
func (e *WaitError) Unwrap() error { return e.Err }

// Do returns what fn returned for the request of key that the callers of
// namespace (see the package's comment) share: fn's error, a *SlotError
// when the request found no slot within the timeout, a *WaitError when the
// caller's context ended first, or park.ErrParked.
func (g *Group) Do(ctx context.Context, namespace, key string, fn func(context.Context) (any, error)) (any, error) {
	flight := namespace + "\x00" + key
	if g.opts.Solo {
		flight += "\x00" + strconv.FormatUint(g.solo.Add(1), 10)
	}
	res, err := park.Wait(ctx, key, func() <-chan singleflight.Result {
		if !g.opts.Solo {
			if ch := g.running.join(key); ch != nil {
				return ch
			}
		}
		return g.pending.DoChan(flight, func() (v any, err error) {
			// Not its first caller's: neither its cancellation nor its Spot.
			rctx, cancel := context.WithTimeoutCause(context.WithoutCancel(park.WithSpot(ctx, nil)), g.opts.Timeout, g.opts.TimeoutCause)
			defer cancel()
			defer func() {
				if r := recover(); r != nil {
					v, err = nil, failure.Recovered(rctx, r)
				}
			}()
			release, err := g.slots.acquire(rctx, namespace)
			if err != nil {
				return nil, err
			}
			defer release()
			if g.opts.Solo {
				return fn(rctx)
			}
			return g.running.do(rctx, key, func() (any, error) { return fn(rctx) })
		})
	})
	switch {
	case errors.Is(err, park.ErrParked):
		return nil, err
	case err != nil:
		return nil, &WaitError{Err: err}
	}
	return res.Val, res.Err
}

// Joined is how many callers joined the requests running now rather than
// start their own: the tests of the packages that share requests wait for
// them rather than sleep.
func (g *Group) Joined() int {
	g.running.mu.Lock()
	defer g.running.mu.Unlock()
	n := 0
	for _, c := range g.running.calls {
		n += int(c.joined.Load())
	}
	return n
}

// runningCalls are the shared requests that hold their slot, by key: the
// ones a caller of any namespace joins.
type runningCalls struct {
	mu    sync.Mutex
	calls map[string]*runningCall
}

type runningCall struct {
	done chan struct{}
	res  singleflight.Result
	// joined counts the callers that joined it (Joined).
	joined atomic.Int32
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
	c.joined.Add(1)
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
		r.mu.Lock()
		if r.calls[key] == c {
			delete(r.calls, key)
		}
		r.mu.Unlock()
		close(c.done)
		v, err = c.res.Val, c.res.Err
	}()
	c.res.Val, c.res.Err = fn()
	return c.res.Val, c.res.Err
}
