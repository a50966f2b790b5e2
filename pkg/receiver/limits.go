package receiver

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// maxReceiverLimiters bounds the limiters kept, one a Receiver that had a
// delivery: past it, those refilled (as good as new) are dropped, then the
// one unused longest.
const maxReceiverLimiters = 4096

// limits are the token buckets of deliveries: one per Receiver, by UID,
// then one for all, and the slots of deliveries in flight.
type limits struct {
	clock  clock.PassiveClock
	global *rate.Limiter
	qps    rate.Limit
	burst  int
	slots  chan struct{}

	mu          sync.Mutex
	perReceiver map[types.UID]*receiverLimiter
}

// receiverLimiter is the bucket of one Receiver and when it was last used.
type receiverLimiter struct {
	*rate.Limiter
	used time.Time
}

func newLimits(o Options, c clock.PassiveClock) *limits {
	return &limits{
		clock:       c,
		global:      rate.NewLimiter(rate.Limit(o.QPS), o.Burst),
		qps:         rate.Limit(o.PerReceiverQPS),
		burst:       o.PerReceiverBurst,
		slots:       make(chan struct{}, o.MaxInFlight),
		perReceiver: map[types.UID]*receiverLimiter{},
	}
}

// allow takes a token of uid's bucket, then of the global one. When either
// is empty it takes none and returns how long until one is there.
func (l *limits) allow(uid types.UID) (bool, time.Duration) {
	now := l.clock.Now()
	own := l.receiver(uid, now).ReserveN(now, 1)
	if wait := refused(own, now); wait > 0 {
		return false, wait
	}
	all := l.global.ReserveN(now, 1)
	if wait := refused(all, now); wait > 0 {
		own.CancelAt(now)
		return false, wait
	}
	return true, 0
}

// refused cancels r and returns the wait it asks for when it asks for one
// (at least a second when it can never be granted); 0 when it is granted
// now.
func refused(r *rate.Reservation, now time.Time) time.Duration {
	if !r.OK() {
		return time.Second
	}
	wait := r.DelayFrom(now)
	if wait > 0 {
		r.CancelAt(now)
	}
	return wait
}

// receiver returns uid's limiter, made when missing.
func (l *limits) receiver(uid types.UID, now time.Time) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.perReceiver[uid]
	if !ok {
		if len(l.perReceiver) >= maxReceiverLimiters {
			l.prune(now)
		}
		r = &receiverLimiter{Limiter: rate.NewLimiter(l.qps, l.burst)}
		l.perReceiver[uid] = r
	}
	r.used = now
	return r.Limiter
}

// prune drops the limiters that refilled, and if none did, the one unused
// longest. l.mu is held.
func (l *limits) prune(now time.Time) {
	var oldest types.UID
	var oldestUsed time.Time
	for uid, r := range l.perReceiver {
		if r.TokensAt(now) >= float64(l.burst) {
			delete(l.perReceiver, uid)
			continue
		}
		if oldest == "" || r.used.Before(oldestUsed) {
			oldest, oldestUsed = uid, r.used
		}
	}
	if len(l.perReceiver) >= maxReceiverLimiters {
		delete(l.perReceiver, oldest)
	}
}

// acquire takes a slot of a delivery in flight, false when none is free.
func (l *limits) acquire() bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// release gives back a slot acquire took.
func (l *limits) release() { <-l.slots }
