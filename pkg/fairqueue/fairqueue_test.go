package fairqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
)

// tenantOf is the tenant of the test's items: "a/1" is tenant a's.
func tenantOf(item string) string {
	tenant, _, _ := strings.Cut(item, "/")
	return tenant
}

// popAll pops every item waiting, ending none.
func popAll(q *Queue[string]) []string {
	var got []string
	for q.Len() > 0 {
		got = append(got, q.Pop())
	}
	return got
}

func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share int
		push  []string
		want  []string
	}{
		{
			name:  "one tenant: first in, first out",
			share: 2,
			push:  []string{"a/1", "a/2", "a/3"},
			want:  []string{"a/1", "a/2", "a/3"},
		},
		{
			name:  "tenants take turns, each its oldest first",
			share: 10,
			push:  []string{"a/1", "a/2", "a/3", "b/1", "c/1", "b/2"},
			want:  []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"},
		},
		{
			name:  "a tenant at its share waits while another is below it",
			share: 1,
			push:  []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"},
			// a/1 runs: a is at its share; b and c (below) go first, then
			// the tenants at their share take turns (no worker idles).
			want: []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(tc.share, tenantOf)
			for _, item := range tc.push {
				q.Push(item)
			}
			assert.Equal(t, len(tc.push), q.Len())
			assert.Equal(t, tc.want, popAll(q))
			assert.Zero(t, q.Len())
		})
	}
}

// A tenant that falls below its share takes its turn again, at the end of
// the turns; one with nothing waiting or running is forgotten.
func TestDoneGivesTheTurnBack(t *testing.T) {
	q := New(1, tenantOf)
	for _, item := range []string{"a/1", "a/2", "b/1", "b/2", "c/1", "c/2"} {
		q.Push(item)
	}
	assert.Equal(t, []string{"a/1", "b/1", "c/1"}, []string{q.Pop(), q.Pop(), q.Pop()})
	assert.Equal(t, 3, q.Stats().AtShare)
	q.Done("b/1")
	assert.Equal(t, 2, q.Stats().AtShare)
	assert.Equal(t, "b/2", q.Pop(), "b is the only tenant below its share")
	q.Done("c/1")
	q.Done("a/1")
	assert.Equal(t, "c/2", q.Pop(), "c fell below first")
	assert.Equal(t, "a/2", q.Pop())
	for _, item := range []string{"a/2", "b/2", "c/2"} {
		q.Done(item)
	}
	q.Done("z/1") // never popped: nothing runs
	assert.Empty(t, q.tenants, "nothing waits or runs")
}

// SetShare moves the tenants between the turns.
func TestSetShare(t *testing.T) {
	q := New(1, tenantOf)
	for _, item := range []string{"a/1", "a/2", "b/1", "b/2"} {
		q.Push(item)
	}
	assert.Equal(t, "a/1", q.Pop())
	q.SetShare(2)
	assert.Equal(t, "b/1", q.Pop())
	assert.Equal(t, "a/2", q.Pop(), "a runs one item, below a share of 2")
}

// Stats tell how many items wait, how long the oldest has waited, and how
// many tenants wait at their share.
func TestStats(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	q := New(1, tenantOf)
	q.now = func() time.Time { return now }
	assert.Equal(t, Stats{}, q.Stats())
	q.Push("a/1")
	now = now.Add(time.Second)
	q.Push("a/2")
	q.Push("b/1")
	now = now.Add(time.Second)
	assert.Equal(t, Stats{Waiting: 3, Oldest: 2 * time.Second}, q.Stats())
	q.Pop() // a/1 runs: a waits at its share
	assert.Equal(t, Stats{Waiting: 2, Oldest: time.Second, AtShare: 1}, q.Stats())
}

// Under client-go's workqueue with four workers and a share of two: a
// tenant alone takes every worker (none idles); once another tenant's items
// wait, each worker that frees goes to the tenant below its share, until
// both run their share.
func TestShareOfTheWorkers(t *testing.T) {
	store := New(2, tenantOf)
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: store})
	defer q.ShutDown()
	started := make(chan string)
	finish := map[string]chan struct{}{}
	for _, item := range []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "b/1", "b/2", "b/3"} {
		finish[item] = make(chan struct{})
	}
	for range 4 {
		go func() {
			for {
				item, quit := q.Get()
				if quit {
					return
				}
				started <- item
				<-finish[item]
				q.Done(item)
				store.Done(item)
			}
		}()
	}
	next := func() string {
		select {
		case item := <-started:
			return item
		case <-time.After(time.Minute):
			require.FailNow(t, "no worker took an item")
			return ""
		}
	}
	for _, item := range []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6"} {
		q.Add(item)
	}
	var running []string
	for range 4 {
		running = append(running, next())
	}
	assert.ElementsMatch(t, []string{"a/1", "a/2", "a/3", "a/4"}, running, "a alone takes every worker")

	for _, item := range []string{"b/1", "b/2", "b/3"} {
		q.Add(item)
	}
	close(finish["a/1"])
	assert.Equal(t, "b/1", next(), "a runs past its share: the freed worker goes to b")
	close(finish["a/2"])
	assert.Equal(t, "b/2", next())
	close(finish["a/3"])
	assert.Equal(t, "a/5", next(), "b runs its share, a below it")
	close(finish["a/4"])
	assert.Equal(t, "a/6", next(), "each runs its share")
	close(finish["b/1"])
	assert.Equal(t, "b/3", next())
	for _, item := range []string{"a/5", "a/6", "b/2", "b/3"} {
		close(finish[item])
	}
}
