package cluster

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Bounds of the measured ratios: a ratio outside them says more about a
// measure gone wrong (a GET stuck behind a slow connection, a LIST of an
// empty page) than about the cluster.
const (
	minListCostRatio, maxListCostRatio         = 5, 1000
	minFullListCostRatio, maxFullListCostRatio = 1, 200
)

// What Costs needs before it trusts its measure over the defaults: GETs
// and listed items, as decayed counts (see costHalfLife).
const (
	minGetSamples  = 20
	minListedItems = 2000
)

// costHalfLife is how fast Costs forgets: a measure made costHalfLife ago
// weighs half as much as one made now, so the ratios follow the cluster's
// load within minutes (a kube-apiserver saturated by a round prices a LIST
// item otherwise than an idle one).
const costHalfLife = time.Minute

// Costs measures what reads of one cluster cost, as convoy-apiserver sees
// them: how long a GET of a whole object takes against how long a listed
// item of a metadata-only LIST (Snapshots) and of a LIST of whole objects
// (Reader.ReadAhead) takes, each over a sliding window (decayed sums,
// costHalfLife). Its ratios (ListRatio, FullListRatio) price the
// LIST-or-GETs choices of the passes; until it has measured enough, they
// are the defaults ListCostRatio and FullListCostRatio, measured on one
// machine (docs/contributors/performance.md, "Fleet scale").
//
// A duration is from the request to its decoded answer: it includes the
// wait in the client's rate limiter and in kube-apiserver's queues, which is
// what a request costs when the cluster or the client is the bottleneck
// (docs/contributors/internals.md, "Reads priced by what they cost"). The
// time passes spend waiting for a LIST in flight is not a cost: they share
// it (Snapshots). One Costs serves every identity of a cluster: what a read
// costs the server does not depend on who asks. It is safe for concurrent
// use.
type Costs struct {
	clock clock.PassiveClock

	mu              sync.Mutex
	get, meta, full decayed
}

// decayed is a sum of seconds and of units (requests, listed items) that
// decays by half every costHalfLife.
type decayed struct {
	seconds, units float64
	at             time.Time
}

func (d *decayed) add(now time.Time, seconds, units float64) {
	d.decay(now)
	d.seconds += seconds
	d.units += units
}

func (d *decayed) decay(now time.Time) {
	if !d.at.IsZero() && now.After(d.at) {
		f := math.Exp2(-float64(now.Sub(d.at)) / float64(costHalfLife))
		d.seconds *= f
		d.units *= f
	}
	d.at = now
}

// perUnit is the mean seconds per unit, and whether there are at least
// enough units to tell.
func (d *decayed) perUnit(now time.Time, enough float64) (float64, bool) {
	d.decay(now)
	if d.units < enough || d.seconds <= 0 {
		return 0, false
	}
	return d.seconds / d.units, true
}

// NewCosts returns Costs that have measured nothing yet.
func NewCosts(clk clock.PassiveClock) *Costs {
	return &Costs{clock: clk}
}

// ObserveGet records a GET of one object that took d.
func (c *Costs) ObserveGet(d time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.get.add(c.clock.Now(), d.Seconds(), 1)
	c.mu.Unlock()
}

// ObserveList records a page of a LIST of items objects that took d:
// metadata only, or whole objects (whole).
func (c *Costs) ObserveList(whole bool, items int, d time.Duration) {
	if c == nil || items <= 0 {
		return // an empty page tells nothing of an item
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.meta
	if whole {
		s = &c.full
	}
	s.add(c.clock.Now(), d.Seconds(), float64(items))
}

// ListRatio is how many items of a metadata-only LIST cost as much as one
// GET, and whether it is measured (else it is ListCostRatio).
func (c *Costs) ListRatio() (int, bool) {
	return c.ratio(false, ListCostRatio, minListCostRatio, maxListCostRatio)
}

// FullListRatio is how many items of a LIST of whole objects cost as much
// as one GET, and whether it is measured (else it is FullListCostRatio).
func (c *Costs) FullListRatio() (int, bool) {
	return c.ratio(true, FullListCostRatio, minFullListCostRatio, maxFullListCostRatio)
}

func (c *Costs) ratio(whole bool, def, lo, hi int) (int, bool) {
	if c == nil {
		return def, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	s := &c.meta
	if whole {
		s = &c.full
	}
	get, ok := c.get.perUnit(now, minGetSamples)
	if !ok {
		return def, false
	}
	item, ok := s.perUnit(now, minListedItems)
	if !ok {
		return def, false
	}
	return min(max(int(math.Round(get/item)), lo), hi), true
}
