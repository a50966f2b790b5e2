package flight

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

var errTimeout = errors.New("test timeout")

func newGroup(slots, perNamespace int, solo bool) (*Group, *gauge, *gauge) {
	running, waiting := &gauge{}, &gauge{}
	return New(Options{Slots: slots, PerNamespace: perNamespace, Timeout: time.Minute, TimeoutCause: errTimeout,
		Solo: solo, Running: running, Waiting: waiting}), running, waiting
}

// held is a request that counts its runs, tells each start on started and
// ends when release is closed.
type held struct {
	runs    atomic.Int32
	started chan string
	release chan struct{}
}

func newHeld() *held { return &held{started: make(chan string, 16), release: make(chan struct{})} }

func (h *held) fn(name string) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		h.runs.Add(1)
		h.started <- name
		select {
		case <-h.release:
			return name, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// waitJoined waits until n callers joined the request running.
func waitJoined(t *testing.T, g *Group, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return g.Joined() == n }, 20*time.Second, time.Millisecond)
}

type result struct {
	v   any
	err error
}

func do(g *Group, ctx context.Context, namespace, key string, fn func(context.Context) (any, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := g.Do(ctx, namespace, key, fn)
		ch <- result{v, err}
	}()
	return ch
}

// Concurrent callers of one key share one request; once it runs, callers
// of other namespaces join it too.
func TestDoShares(t *testing.T) {
	ctx := context.Background()
	g, running, _ := newGroup(4, 1, false)
	h := newHeld()
	first := do(g, ctx, "a", "k", h.fn("a"))
	<-h.started
	var others []<-chan result
	for _, ns := range []string{"a", "b", "c"} {
		others = append(others, do(g, ctx, ns, "k", h.fn(ns)))
	}
	waitJoined(t, g, 3)
	close(h.release)
	for _, ch := range append(others, first) {
		r := <-ch
		require.NoError(t, r.err)
		assert.Equal(t, "a", r.v, "a's request answered them all")
	}
	assert.Equal(t, int32(1), h.runs.Load())
	running.waitFor(t, 0)
}

// A request waiting for its namespace's slot is not joined by another
// namespace, which sends its own.
func TestDoPendingStaysInItsNamespace(t *testing.T) {
	ctx := context.Background()
	g, _, waiting := newGroup(4, 1, false)
	h := newHeld()
	hold := do(g, ctx, "a", "other", h.fn("a-other"))
	<-h.started
	pending := do(g, ctx, "a", "k", h.fn("a"))
	waiting.waitFor(t, 1)

	quick := func(context.Context) (any, error) { return "b", nil }
	v, err := g.Do(ctx, "b", "k", quick)
	require.NoError(t, err)
	assert.Equal(t, "b", v, "b ran its own request")
	assert.Empty(t, pending)

	close(h.release)
	require.NoError(t, (<-hold).err)
	r := <-pending
	require.NoError(t, r.err)
	assert.Equal(t, "a", r.v)
}

// Solo: every caller a request of its own.
func TestDoSolo(t *testing.T) {
	g, _, _ := newGroup(4, 4, true)
	h := newHeld()
	a := do(g, context.Background(), "a", "k", h.fn("1"))
	b := do(g, context.Background(), "a", "k", h.fn("2"))
	<-h.started
	<-h.started
	close(h.release)
	assert.ElementsMatch(t, []any{"1", "2"}, []any{(<-a).v, (<-b).v})
	assert.Equal(t, int32(2), h.runs.Load())
}

// A caller whose context ends stops waiting (WaitError); the request goes
// on to its end for the others, on a context of its own.
func TestDoCallerGivesUp(t *testing.T) {
	g, running, _ := newGroup(1, 1, false)
	h := newHeld()
	ctx, cancel := context.WithCancelCause(context.Background())
	first := do(g, ctx, "a", "k", h.fn("a"))
	<-h.started
	second := do(g, context.Background(), "a", "k", h.fn("a2"))
	waitJoined(t, g, 1)
	gone := errors.New("client went away")
	cancel(gone)
	r := <-first
	var waitErr *WaitError
	require.ErrorAs(t, r.err, &waitErr)
	assert.ErrorIs(t, r.err, gone)
	assert.Equal(t, int64(1), running.n.Load(), "the request keeps its slot")
	close(h.release)
	r = <-second
	require.NoError(t, r.err)
	assert.Equal(t, "a", r.v)
}

// A request's timeout is its TimeoutCause; a joiner of another namespace
// that waits for it gets it too.
func TestDoTimeout(t *testing.T) {
	g := New(Options{Slots: 2, PerNamespace: 1, Timeout: time.Second, TimeoutCause: errTimeout})
	h := newHeld()
	a := do(g, context.Background(), "a", "k", h.fn("a"))
	<-h.started
	b := do(g, context.Background(), "b", "k", h.fn("b"))
	waitJoined(t, g, 1)
	assert.ErrorIs(t, (<-a).err, errTimeout)
	assert.ErrorIs(t, (<-b).err, errTimeout)
	assert.Equal(t, int32(1), h.runs.Load())
}

// A panic of a request is its callers' InternalError, the joiners' of
// other namespaces too, and the next request runs.
func TestDoPanics(t *testing.T) {
	g, _, _ := newGroup(2, 1, false)
	started, release := make(chan struct{}), make(chan struct{})
	boom := func(context.Context) (any, error) {
		close(started)
		<-release
		panic("boom")
	}
	a := do(g, context.Background(), "a", "k", boom)
	<-started
	b := do(g, context.Background(), "b", "k", boom)
	waitJoined(t, g, 1)
	close(release)
	for _, ch := range []<-chan result{a, b} {
		r := <-ch
		ferr, ok := failure.As(r.err)
		require.True(t, ok, "%v", r.err)
		assert.Equal(t, failure.ReasonInternalError, ferr.Reason)
		assert.Contains(t, ferr.Message, "boom")
	}
	v, err := g.Do(context.Background(), "a", "k", func(context.Context) (any, error) { return "next", nil })
	require.NoError(t, err)
	assert.Equal(t, "next", v)
}
