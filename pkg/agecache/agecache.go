// Package agecache is the one bounded cache of convoy-apiserver's engines
// (compares, renders, verdicts): least recently used entries go beyond a
// size, and no entry is returned past a maximum age, so that what the
// caches keep stays within memory and within the freshness the flags
// promise (--cache-max-age). A tenant can make many entries: every cache of
// the server is one of these.
package agecache

import (
	"container/list"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Cache maps keys to values, at most maxSize of them (by count, or by the
// sizes sizeOf gives), each for at most maxAge. It is safe for concurrent
// use.
type Cache[K comparable, V any] struct {
	maxSize int
	maxAge  time.Duration
	clock   clock.PassiveClock
	sizeOf  func(V) int

	mu      sync.Mutex
	size    int
	order   *list.List // of *entry[K, V], most recently used first
	entries map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key   K
	value V
	at    int64 // the clock's UnixNano when the value was put
	size  int
}

// New returns a Cache of at most maxSize entries whose values are returned
// for at most maxAge. With sizeOf, maxSize bounds the sum of the sizes of
// the values instead, and a value larger than maxSize is not kept.
func New[K comparable, V any](maxSize int, maxAge time.Duration, clk clock.PassiveClock, sizeOf func(V) int) *Cache[K, V] {
	return &Cache[K, V]{maxSize: maxSize, maxAge: maxAge, clock: clk, sizeOf: sizeOf, order: list.New(), entries: map[K]*list.Element{}}
}

// Get returns the value of key when it is younger than the maximum age; an
// older one is dropped.
func (c *Cache[K, V]) Get(key K) (V, bool) { return c.GetSince(key, time.Time{}) }

// GetSince is Get of a value put at since or later: an older one is
// kept, for others, but not returned (a refresh asks for what was read
// after it was requested).
func (c *Cache[K, V]) GetSince(key K, since time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[K, V])
	if c.clock.Now().UnixNano()-e.at >= int64(c.maxAge) {
		c.remove(el)
		return zero, false
	}
	if !since.IsZero() && e.at < since.UnixNano() {
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// Put sets the value of key, as new, and drops the least recently used
// values beyond the maximum size.
func (c *Cache[K, V]) Put(key K, value V) {
	size := 1
	if c.sizeOf != nil {
		size = c.sizeOf(value)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	if size > c.maxSize {
		return
	}
	c.entries[key] = c.order.PushFront(&entry[K, V]{key: key, value: value, at: c.clock.Now().UnixNano(), size: size})
	c.size += size
	for c.size > c.maxSize {
		c.remove(c.order.Back())
	}
}

// Remove drops the value of key.
func (c *Cache[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
}

// Len returns how many values the cache holds.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Size returns the sum of the sizes of the values (their count without
// sizeOf).
func (c *Cache[K, V]) Size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

func (c *Cache[K, V]) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry[K, V])
	delete(c.entries, e.key)
	c.size -= e.size
}
