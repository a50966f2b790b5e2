package observer

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy-apiserver/pkg/park"
)

// spots are the Spots the passes of a loop park on (pkg/park), one per
// Release whose pass runs, has parked, or holds results of parked waits. A
// nil *spots parks nothing.
type spots struct {
	grace time.Duration
	// wake adds a Release to the loop's queue.
	wake func(cache.ObjectName)

	mu sync.Mutex
	at map[cache.ObjectName]*park.Spot
}

func newSpots(grace time.Duration, wake func(cache.ObjectName)) *spots {
	return &spots{grace: grace, wake: wake, at: map[cache.ObjectName]*park.Spot{}}
}

// take returns the Spot of the pass of key that starts, nil when s is nil.
func (s *spots) take(key cache.ObjectName) *park.Spot {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	spot := s.at[key]
	if spot == nil {
		spot = park.NewSpot(s.grace, func() { s.wake(key) })
		s.at[key] = spot
	}
	spot.Begin()
	return spot
}

// ended records that a pass of key ran to its end, or did not run (its
// Release is gone): its Spot drops its results, and goes when no parked
// wait is left.
func (s *spots) ended(key cache.ObjectName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if spot := s.at[key]; spot != nil && spot.End() {
		delete(s.at, key)
	}
}

// parked counts the Releases whose passes parked and wait for a request.
func (s *spots) parked() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, spot := range s.at {
		if spot.Waiting() {
			n++
		}
	}
	return n
}
