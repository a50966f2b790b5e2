package park

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/singleflight"
)

// request is a request whose result the test sends on ch; started counts
// the calls of start.
type request struct {
	ch      chan singleflight.Result
	started atomic.Int32
}

func newRequest() *request { return &request{ch: make(chan singleflight.Result, 1)} }

func (r *request) start() <-chan singleflight.Result {
	r.started.Add(1)
	return r.ch
}

// Without a Spot a caller waits for the result, or until its context ends.
func TestWaitWithoutASpot(t *testing.T) {
	r := newRequest()
	r.ch <- singleflight.Result{Val: "digest"}
	res, err := Wait(context.Background(), "k", r.start)
	require.NoError(t, err)
	assert.Equal(t, "digest", res.Val)

	cause := errors.New("the client went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	_, err = Wait(ctx, "k", newRequest().start)
	assert.ErrorIs(t, err, cause)
}

// A request that ends within the grace is waited for; one that does not
// parks the pass, which starts no other request; the wait goes on, wakes
// the Release when it ends, and the next pass gets its result, an error
// too, at every step that asks for it, without asking again.
func TestWaitParksAndWakes(t *testing.T) {
	woken := make(chan struct{}, 4)
	spot := NewSpot(10*time.Millisecond, func() { woken <- struct{}{} })
	ctx := WithSpot(context.Background(), spot)

	spot.Begin()
	fast := newRequest()
	fast.ch <- singleflight.Result{Val: "index"}
	res, err := Wait(ctx, "index", fast.start)
	require.NoError(t, err)
	assert.Equal(t, "index", res.Val)

	slow := newRequest()
	_, err = Wait(ctx, "resolve", slow.start)
	require.ErrorIs(t, err, ErrParked)
	assert.True(t, spot.Waiting())
	other := newRequest()
	_, err = Wait(ctx, "content", other.start)
	require.ErrorIs(t, err, ErrParked, "a pass parks once")
	assert.Zero(t, other.started.Load(), "and starts nothing after")

	failed := errors.New("fetch timeout")
	slow.ch <- singleflight.Result{Err: failed}
	<-woken
	assert.False(t, spot.Waiting())

	spot.Begin() // the pass the wake started
	for range 2 {
		res, err = Wait(ctx, "resolve", slow.start)
		require.NoError(t, err)
		assert.ErrorIs(t, res.Err, failed, "the result of the parked wait, at each step")
	}
	assert.Equal(t, int32(1), slow.started.Load(), "not asked again")
	assert.True(t, spot.End(), "no wait left")

	spot.Begin()
	again := newRequest()
	again.ch <- singleflight.Result{Val: "digest"}
	res, err = Wait(ctx, "resolve", again.start)
	require.NoError(t, err)
	assert.Equal(t, "digest", res.Val, "a pass that ran to its end dropped the results")
}

// A pass that parks keeps the results it used and drops the others: a
// Release whose spec changes between passes does not pile them up.
func TestParkKeepsWhatThePassUsed(t *testing.T) {
	woken := make(chan struct{}, 4)
	spot := NewSpot(time.Millisecond, func() { woken <- struct{}{} })
	ctx := WithSpot(context.Background(), spot)
	park := func(key string) *request {
		r := newRequest()
		_, err := Wait(ctx, key, r.start)
		require.ErrorIs(t, err, ErrParked)
		return r
	}

	spot.Begin()
	park("old").ch <- singleflight.Result{Val: "old"}
	<-woken
	spot.Begin()
	park("resolve").ch <- singleflight.Result{Val: "digest"}
	<-woken

	spot.Begin() // the spec changed: this pass asks for "resolve" only
	res, err := Wait(ctx, "resolve", newRequest().start)
	require.NoError(t, err)
	assert.Equal(t, "digest", res.Val)
	pending := park("content")

	spot.mu.Lock()
	assert.Contains(t, spot.results, "resolve")
	assert.NotContains(t, spot.results, "old")
	spot.mu.Unlock()
	pending.ch <- singleflight.Result{Val: "chart"}
	<-woken
}
