package flight

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gauge is a Gauge the tests read.
type gauge struct{ n atomic.Int64 }

func (g *gauge) Inc() { g.n.Add(1) }
func (g *gauge) Dec() { g.n.Add(-1) }

func (g *gauge) waitFor(t *testing.T, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return g.n.Load() == want }, 20*time.Second, time.Millisecond, "gauge at %d, want %d", g.n.Load(), want)
}

func TestSlots(t *testing.T) {
	ctx := context.Background()
	running, waiting := &gauge{}, &gauge{}
	s := newSlots(3, 2, running, waiting)
	a1, err := s.acquire(ctx, "a")
	require.NoError(t, err)
	a2, err := s.acquire(ctx, "a")
	require.NoError(t, err)

	// A third of namespace a waits for its namespace, with a slot of all
	// still free.
	cancelled, cancel := context.WithCancelCause(ctx)
	cause := context.DeadlineExceeded
	cancel(cause)
	_, err = s.acquire(cancelled, "a")
	var slotErr *SlotError
	require.ErrorAs(t, err, &slotErr)
	assert.Equal(t, "a", slotErr.Namespace)
	assert.ErrorIs(t, err, cause)

	// Namespace b gets the last slot of all; c waits for one of all.
	b1, err := s.acquire(ctx, "b")
	require.NoError(t, err)
	got := make(chan func(), 1)
	go func() {
		release, err := s.acquire(ctx, "c")
		assert.NoError(t, err)
		got <- release
	}()
	waiting.waitFor(t, 1)
	assert.Equal(t, int64(3), running.n.Load())
	a1()
	c1 := <-got
	a1() // a second call gives nothing back again
	a2()
	b1()
	c1()
	assert.Zero(t, running.n.Load())
	assert.Empty(t, s.namespaces, "no namespace is remembered once its requests ended")
	assert.Empty(t, s.all)

	// One of all, none of it free: the error names no namespace.
	one := newSlots(1, 1, nil, nil)
	held, err := one.acquire(ctx, "a")
	require.NoError(t, err)
	soon, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	_, err = one.acquire(soon, "b")
	require.ErrorAs(t, err, &slotErr)
	assert.Empty(t, slotErr.Namespace)
	held()
}

// A namespace's cap above all the slots is all of them.
func TestSlotsPerNamespaceAtMostAll(t *testing.T) {
	s := newSlots(1, 2, nil, nil)
	assert.Equal(t, 1, s.perNamespace)
}
