package receiver

import (
	"container/list"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// dedupKey is a delivery: its Receiver and its id.
type dedupKey struct {
	uid types.UID
	id  string
}

// seenDelivery is a delivery remembered and when it was first seen.
type seenDelivery struct {
	key dedupKey
	at  time.Time
}

// dedup remembers the verified deliveries of the last window, at most
// size of them, the oldest first forgotten: a least recently seen list,
// in the order they were seen.
type dedup struct {
	window time.Duration
	size   int

	mu    sync.Mutex
	order *list.List // of seenDelivery, oldest at the front
	byKey map[dedupKey]*list.Element
}

func newDedup(window time.Duration, size int) *dedup {
	return &dedup{window: window, size: size, order: list.New(), byKey: map[dedupKey]*list.Element{}}
}

// seen tells whether the delivery k was seen within the window before now,
// and remembers it from now when it was not.
func (d *dedup) seen(k dedupKey, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(now)
	if _, ok := d.byKey[k]; ok {
		return true
	}
	d.byKey[k] = d.order.PushBack(seenDelivery{key: k, at: now})
	for d.order.Len() > d.size {
		d.remove(d.order.Front())
	}
	return false
}

// forget forgets the delivery k, so that its redelivery is handled: the
// refreshes it asked for failed.
func (d *dedup) forget(k dedupKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byKey[k]; ok {
		d.remove(e)
	}
}

// expire forgets the deliveries seen a window or more before now. d.mu is
// held.
func (d *dedup) expire(now time.Time) {
	for e := d.order.Front(); e != nil && now.Sub(e.Value.(seenDelivery).at) >= d.window; e = d.order.Front() {
		d.remove(e)
	}
}

// remove forgets the delivery of e. d.mu is held.
func (d *dedup) remove(e *list.Element) {
	delete(d.byKey, e.Value.(seenDelivery).key)
	d.order.Remove(e)
}
