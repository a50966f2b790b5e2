package agecache

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	tests := []struct {
		name string
		run  func(t *testing.T, c *Cache[string, int])
	}{
		{"a value is returned while young", func(t *testing.T, c *Cache[string, int]) {
			c.Put("a", 1)
			clk.SetTime(clk.Now().Add(time.Minute - time.Nanosecond))
			v, ok := c.Get("a")
			assert.True(t, ok)
			assert.Equal(t, 1, v)
		}},
		{"an old value is dropped", func(t *testing.T, c *Cache[string, int]) {
			c.Put("a", 1)
			clk.SetTime(clk.Now().Add(time.Minute))
			_, ok := c.Get("a")
			assert.False(t, ok)
			assert.Equal(t, 0, c.Len())
		}},
		{"putting again makes it new", func(t *testing.T, c *Cache[string, int]) {
			c.Put("a", 1)
			clk.SetTime(clk.Now().Add(50 * time.Second))
			c.Put("a", 2)
			clk.SetTime(clk.Now().Add(50 * time.Second))
			v, ok := c.Get("a")
			assert.True(t, ok)
			assert.Equal(t, 2, v)
			assert.Equal(t, 1, c.Len())
		}},
		{"the least recently used goes beyond the size", func(t *testing.T, c *Cache[string, int]) {
			c.Put("a", 1)
			c.Put("b", 2)
			c.Put("c", 3)
			_, _ = c.Get("a") // b is now the least recently used
			c.Put("d", 4)
			_, okA := c.Get("a")
			_, okB := c.Get("b")
			assert.True(t, okA)
			assert.False(t, okB)
			assert.Equal(t, 3, c.Len())
		}},
		{"removed", func(t *testing.T, c *Cache[string, int]) {
			c.Put("a", 1)
			c.Remove("a")
			c.Remove("nothing")
			_, ok := c.Get("a")
			assert.False(t, ok)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, New[string, int](3, time.Minute, clk, nil))
		})
	}
}

func TestCacheBySize(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	c := New[string, string](10, time.Minute, clk, func(s string) int { return len(s) })
	c.Put("a", "xxxx")
	c.Put("b", "yyyy")
	assert.Equal(t, 8, c.Size())
	c.Put("c", "zzzz") // 12: a goes
	_, ok := c.Get("a")
	assert.False(t, ok)
	assert.Equal(t, 8, c.Size())
	c.Put("big", "0123456789a") // larger than the cache: not kept, nothing evicted
	_, ok = c.Get("big")
	assert.False(t, ok)
	assert.Equal(t, 2, c.Len())
	c.Put("b", "y") // replaced: its size too
	assert.Equal(t, 5, c.Size())
}

// Under -race: concurrent use is safe.
func TestCacheConcurrent(t *testing.T) {
	c := New[int, int](100, time.Minute, clocktesting.NewFakePassiveClock(time.Now()), nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				c.Put(i%150, g)
				_, _ = c.Get(i % 150)
				if i%7 == 0 {
					c.Remove(i % 150)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, c.Len(), 100)
	assert.Equal(t, c.Len(), c.Size(), fmt.Sprint("count and size agree"))
}

// GetSince returns only what was put at since or later, and keeps the
// older value for the others.
func TestCacheGetSince(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	c := New[string, int](10, time.Hour, clk, nil)
	c.Put("a", 1)
	put := clk.Now()
	clk.SetTime(put.Add(time.Minute))
	_, ok := c.GetSince("a", put.Add(time.Second))
	assert.False(t, ok, "put before since")
	v, ok := c.GetSince("a", put)
	assert.True(t, ok, "put at since")
	assert.Equal(t, 1, v)
	v, ok = c.Get("a")
	assert.True(t, ok, "kept for the others")
	assert.Equal(t, 1, v)
	clk.SetTime(put.Add(time.Hour))
	_, ok = c.GetSince("a", put)
	assert.False(t, ok, "past the maximum age")
}
