// Package fairqueue is a store of client-go's workqueue
// (workqueue.TypedQueueConfig.Queue) that takes turns between tenants (the
// namespaces of the observer's loops): a free worker takes the oldest item
// of the next tenant in turn whose items run on fewer workers than its
// share, and a tenant at its share only when no other tenant below it has
// an item waiting. One namespace's slow Releases can thus hold at most its
// share of a loop's workers while another namespace's passes wait, and no
// worker idles while an item waits (docs/contributors/decisions.md, "Fair
// loops").
//
// The workqueue calls Push, Pop, Len and Touch under its own lock; the
// owner calls Done once for each item a Pop returned, when its processing
// ends, so that the store counts what runs.
package fairqueue

import (
	"container/list"
	"sync"
	"time"
)

// Queue is the store. Its zero value is not usable: see New.
type Queue[T comparable] struct {
	tenantOf func(T) string
	now      func() time.Time

	mu    sync.Mutex
	share int
	// tenants holds the tenants with items waiting or running.
	tenants map[string]*tenant[T]
	// below and at hold the tenants with items waiting, in turn: those
	// that run fewer items than their share, and the others.
	below, at list.List
	waiting   int
}

type tenant[T comparable] struct {
	name    string
	items   []entry[T] // waiting, oldest first
	running int
	// turn is the tenant's element in turns (below or at) while it has
	// items waiting, nil otherwise.
	turn  *list.Element
	turns *list.List
}

type entry[T comparable] struct {
	item  T
	since time.Time
}

// New returns a store whose tenants, by tenantOf, run share items each at
// most while another tenant waits (share below 1 is 1).
func New[T comparable](share int, tenantOf func(T) string) *Queue[T] {
	return &Queue[T]{tenantOf: tenantOf, now: time.Now, share: max(share, 1), tenants: map[string]*tenant[T]{}}
}

// SetShare sets the share (below 1 is 1); the tenants keep their order,
// those below the old share first.
func (q *Queue[T]) SetShare(share int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.share = max(share, 1)
	var turns []*tenant[T] // those below first, in turn, then those at
	for _, l := range []*list.List{&q.below, &q.at} {
		for e := l.Front(); e != nil; e = e.Next() {
			turns = append(turns, e.Value.(*tenant[T]))
		}
	}
	for _, t := range turns {
		q.leaveTurn(t)
		q.takeTurn(t)
	}
}

// Touch implements workqueue.Queue: an item added again while it waits
// keeps its place.
func (q *Queue[T]) Touch(T) {}

// Push implements workqueue.Queue: item waits behind its tenant's items.
func (q *Queue[T]) Push(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	name := q.tenantOf(item)
	t := q.tenants[name]
	if t == nil {
		t = &tenant[T]{name: name}
		q.tenants[name] = t
	}
	t.items = append(t.items, entry[T]{item: item, since: q.now()})
	q.waiting++
	if t.turn == nil {
		q.takeTurn(t)
	}
}

// Len implements workqueue.Queue: the items waiting.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}

// Pop implements workqueue.Queue: the oldest item of the first tenant in
// turn below its share, else of the first tenant in turn. The tenant then
// runs one more item and, if it has more waiting, goes to the end of the
// turns.
func (q *Queue[T]) Pop() T {
	q.mu.Lock()
	defer q.mu.Unlock()
	first := q.below.Front()
	if first == nil {
		first = q.at.Front()
	}
	if first == nil {
		var zero T
		return zero // the workqueue pops only when Len is not 0
	}
	t := first.Value.(*tenant[T])
	q.leaveTurn(t)
	e := t.items[0]
	t.items[0] = entry[T]{} // no reference kept in the array
	t.items = t.items[1:]
	q.waiting--
	t.running++
	if len(t.items) > 0 {
		q.takeTurn(t)
	}
	return e.item
}

// Done records that an item Pop returned ended: its tenant runs one item
// fewer, and goes below its share when it falls under it.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.tenants[q.tenantOf(item)]
	if t == nil || t.running == 0 {
		return // not popped: nothing runs
	}
	t.running--
	switch {
	case t.turn == nil:
		if t.running == 0 {
			delete(q.tenants, t.name)
		}
	case t.turns == &q.at && t.running < q.share:
		q.leaveTurn(t)
		q.takeTurn(t)
	}
}

// takeTurn puts t, which has items waiting, at the end of the turns.
func (q *Queue[T]) takeTurn(t *tenant[T]) {
	t.turns = &q.at
	if t.running < q.share {
		t.turns = &q.below
	}
	t.turn = t.turns.PushBack(t)
}

// leaveTurn takes t out of the turns.
func (q *Queue[T]) leaveTurn(t *tenant[T]) {
	t.turns.Remove(t.turn)
	t.turn, t.turns = nil, nil
}

// Stats are what the store tells of the wait.
type Stats struct {
	// Waiting is how many items wait.
	Waiting int
	// Oldest is how long the item that waits longest has waited, 0 when none
	// waits.
	Oldest time.Duration
	// AtShare is how many tenants have items waiting while they run their
	// share: they get a worker only when no other tenant below its share
	// has an item waiting.
	AtShare int
}

// Stats returns the store's stats now.
func (q *Queue[T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Waiting: q.waiting, AtShare: q.at.Len()}
	now := q.now()
	for _, l := range []*list.List{&q.below, &q.at} {
		for e := l.Front(); e != nil; e = e.Next() {
			s.Oldest = max(s.Oldest, now.Sub(e.Value.(*tenant[T]).items[0].since))
		}
	}
	return s
}
