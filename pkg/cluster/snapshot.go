package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// DefaultListFreshness is how long a Snapshot is shared.
const DefaultListFreshness = 5 * time.Second

// Bounds of the Snapshots of one Target: a page of a metadata LIST, and the
// (resource, namespace) pairs kept.
const (
	snapshotPageSize = 1000
	maxSnapshots     = 1024
)

// Snapshot is what a metadata-only LIST of one resource in one namespace
// (PartialObjectMetadataList) told: the names of the live objects and their
// resourceVersions, at a time. It keeps nothing else of them, and keeps
// them small (a namespace may hold 75,000 ConfigMaps): a 64-bit hash of
// each name (hash/maphash, seeded at random per process) and the
// resourceVersion as a number when it is one, as kube-apiserver's are.
//
// Two names whose hashes collide share an entry: one of them is answered
// with the other's resourceVersion. That costs a read, never a wrong
// answer: the callers reuse what they know of an object only when its
// resourceVersion is the one they saw, and two objects of a resource never
// have the same one (each is the etcd revision of the object's last write).
type Snapshot struct {
	// At is when the LIST was sent.
	At       time.Time
	seed     maphash.Seed
	versions map[uint64]uint64
	// opaque holds, by name, the resourceVersions that are not a number
	// in canonical form (an aggregated API's may be anything).
	opaque map[string]string
	n      int
}

func newSnapshot(at time.Time, seed maphash.Seed) *Snapshot {
	return &Snapshot{At: at, seed: seed, versions: map[uint64]uint64{}}
}

func (s *Snapshot) add(name, rv string) {
	s.n++
	if v, err := strconv.ParseUint(rv, 10, 64); err == nil && strconv.FormatUint(v, 10) == rv {
		s.versions[maphash.String(s.seed, name)] = v
		return
	}
	if s.opaque == nil {
		s.opaque = map[string]string{}
	}
	s.opaque[name] = rv
}

// ResourceVersion returns the resourceVersion of the object name, and
// whether the LIST saw it.
func (s *Snapshot) ResourceVersion(name string) (string, bool) {
	if rv, ok := s.opaque[name]; ok {
		return rv, true
	}
	v, ok := s.versions[maphash.String(s.seed, name)]
	if !ok {
		return "", false
	}
	return strconv.FormatUint(v, 10), true
}

// Len is the number of objects the LIST saw.
func (s *Snapshot) Len() int { return s.n }

// Snapshots reads and shares Snapshots of one cluster as one identity: the
// first pass that asks for (resource, namespace) sends the LIST, the passes
// that ask within the freshness window (also while it is in flight) get the
// same Snapshot. There is one LIST per key at a time, and a window lists
// only when it is worth it (worthListing); else it answers
// ErrNotWorthListing and the passes read one by one. An error (the identity
// may not list) is kept for the window too. The rules, their bounds and the
// runs that made them are in docs/contributors/internals.md and
// docs/contributors/performance.md ("Fleet scale").
type Snapshots struct {
	client    metadata.Interface
	seed      maphash.Seed
	freshness time.Duration
	clock     clock.PassiveClock

	// costs prices a GET in listed items (nil: ListCostRatio).
	costs *Costs

	mu      sync.Mutex
	entries *lru.Cache // snapshotKey → *snapshotEntry
}

// listWindowFactor stretches the freshness window of a LIST that took long:
// a LIST is shared for at least this many times as long as it took, so
// that a key spends at most a fifth of its time listing. A LIST of 150,000
// ConfigMaps took 8 s at 10,000 Releases in one namespace: with windows of
// 5 s, that key was being listed 60% of the time, every pass that came
// after a window waited for the next LIST, and the windows that served too
// few passes read one by one (docs/contributors/performance.md, "10,000
// Releases, one leader"). A LIST that takes less than a quarter of --list-freshness keeps
// the flag's window.
const listWindowFactor = 4

// ListCostRatio is how many objects of a metadata-only LIST cost about as
// much kube-apiserver work as one GET of a whole object until Costs has
// measured it on the cluster (see "Fleet scale" in
// docs/contributors/performance.md for what was measured on one machine:
// 23 to 76 by the fleet's size).
const ListCostRatio = 50

// ErrNotWorthListing says that Snapshots did not LIST for this window
// because the passes ask about too few of the objects; read them one by one.
var ErrNotWorthListing = errors.New("listing is not worth it for this window: the objects are read one by one")

type snapshotKey struct {
	resource  schema.GroupVersionResource
	namespace string
}

type snapshotEntry struct {
	done chan struct{} // closed when the LIST is done
	// at is when the LIST was sent (what WithListedAfter compares), ended
	// when it was done (when the freshness window starts).
	at, ended time.Time
	snap      *Snapshot
	err       error
	// asked counts the lookups of the window; size is the number of
	// objects of the last LIST of the key (from an earlier window when
	// this one did not LIST); oneByOne counts the lookups answered
	// ErrNotWorthListing since the last LIST (over windows); outdated
	// counts the passes that found it sent before the change they follow
	// and waited for it to end (the tests wait for them). All are guarded
	// by Snapshots.mu.
	asked, size, oneByOne, outdated int
}

// worthListing says whether the window after prev should LIST, one GET
// costing as much as ratio listed objects.
func (prev *snapshotEntry) worthListing(ratio int) bool {
	if prev == nil || prev.size == 0 {
		return true
	}
	demand := prev.asked * ratio
	if prev.snap != nil {
		// Hysteresis: a window that listed is followed by LISTs until the
		// demand halves, so that a demand near the threshold does not make
		// the windows flip between a LIST and reads one by one.
		demand *= 2
	}
	return demand >= prev.size || prev.oneByOne*ratio >= prev.size
}

// NewSnapshots returns Snapshots that LIST with client and share each for
// freshness.
func NewSnapshots(client metadata.Interface, freshness time.Duration, clk clock.PassiveClock) *Snapshots {
	return &Snapshots{client: client, seed: maphash.MakeSeed(), freshness: freshness, clock: clk, entries: lru.New(maxSnapshots)}
}

// PricedBy makes s price a GET by what costs measured on the cluster (and
// record there what its LISTs take), and returns s. Before, or with nil,
// a GET costs ListCostRatio listed objects.
func (s *Snapshots) PricedBy(costs *Costs) *Snapshots {
	s.costs = costs
	return s
}

// listedAfterKey is the context key of WithListedAfter.
type listedAfterKey struct{}

// WithListedAfter returns a context whose Snapshots.Get answers only with a
// LIST sent at or after t (or ErrNotWorthListing: the objects are read one
// by one, which is fresh): a pass that follows a change (a sync that applied
// objects, a new spec) must not reuse what a LIST saw before it.
func WithListedAfter(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, listedAfterKey{}, t)
}

// ListedAfter is the time WithListedAfter put in ctx, zero when none.
func ListedAfter(ctx context.Context) time.Time {
	t, _ := ctx.Value(listedAfterKey{}).(time.Time)
	return t
}

// Get returns a Snapshot of resource in namespace ("" for a cluster-scoped
// resource) no older than the freshness window, or the one in flight, or
// ErrNotWorthListing. With WithListedAfter, a LIST sent earlier is not
// shared: the pass waits for the one in flight, if any (one LIST at a time),
// and then sends or joins a newer one.
func (s *Snapshots) Get(ctx context.Context, resource schema.GroupVersionResource, namespace string) (*Snapshot, error) {
	key := snapshotKey{resource: resource, namespace: namespace}
	notBefore := ListedAfter(ctx)
	for {
		now := s.clock.Now()
		s.mu.Lock()
		var prev *snapshotEntry
		if v, ok := s.entries.Get(key); ok {
			prev = v.(*snapshotEntry)
			inFlight := false
			select {
			case <-prev.done:
			default:
				inFlight = true
			}
			if inFlight || now.Sub(prev.ended) < prev.window(s.freshness) {
				oneByOne := !inFlight && errors.Is(prev.err, ErrNotWorthListing)
				// Rent or buy within the window too: once the reads one
				// by one cost as much as a LIST, list now (a burst of
				// passes, like a resync, after a quiet time would else
				// read one by one for the whole window).
				// The price is asked for only here and when a window
				// opens, not on the lookups that share a LIST: those are
				// the hot path.
				buy := false
				if oneByOne {
					ratio, _ := s.costs.ListRatio()
					buy = prev.oneByOne*ratio >= prev.size
				}
				if !buy && (oneByOne || !prev.at.Before(notBefore)) {
					prev.asked++
					if oneByOne {
						prev.oneByOne++
						snapshotLookups.WithLabelValues("one_by_one").Inc()
					} else {
						snapshotLookups.WithLabelValues("shared").Inc()
					}
					s.mu.Unlock()
					return prev.wait(ctx)
				}
				if inFlight {
					// Sent before the change this pass follows: wait
					// for it to end, then send or join a newer one.
					prev.outdated++
					s.mu.Unlock()
					if _, err := prev.wait(ctx); ctx.Err() != nil {
						return nil, err
					}
					continue
				}
			}
		}
		e := &snapshotEntry{done: make(chan struct{}), at: now, asked: 1}
		s.entries.Add(key, e)
		ratio, measured := s.costs.ListRatio()
		if !prev.worthListing(ratio) {
			e.size, e.err, e.oneByOne, e.ended = prev.size, ErrNotWorthListing, prev.oneByOne+1, now
			snapshotLookups.WithLabelValues("one_by_one").Inc()
			countWindow("one_by_one", ratio, measured)
			close(e.done)
			s.mu.Unlock()
			return nil, e.err
		}
		s.mu.Unlock()
		countWindow("list", ratio, measured)

		snapshotLookups.WithLabelValues("listed").Inc()
		snap, err := s.list(ctx, resource, namespace, now)
		ended := s.clock.Now()
		snapshotListSeconds.Observe(ended.Sub(now).Seconds())
		if err != nil {
			snapshotListErrors.Inc()
			if isTooLarge(err) {
				// Like any error, it is kept for the window, whose passes
				// read one by one; the log says why.
				klog.FromContext(ctx).Info("A page of a shared metadata-only LIST is too large: the objects are read one by one",
					"resource", resource.GroupResource(), "namespace", namespace, "reason", ReasonResponseTooLarge, "err", err.Error())
			}
		}
		s.mu.Lock()
		e.snap, e.err, e.ended = snap, err, ended
		if snap != nil {
			e.size = snap.Len()
		} else if prev != nil {
			e.size = prev.size
		}
		s.mu.Unlock()
		close(e.done)
		return e.snap, e.err
	}
}

// window is how long e is shared after its LIST ended: freshness, or
// listWindowFactor times as long as the LIST took when that is longer.
func (e *snapshotEntry) window(freshness time.Duration) time.Duration {
	if e.snap == nil {
		return freshness
	}
	return max(freshness, listWindowFactor*e.ended.Sub(e.at))
}

// wait returns the Snapshot of e once its LIST is done.
func (e *snapshotEntry) wait(ctx context.Context) (*Snapshot, error) {
	select {
	case <-e.done:
		return e.snap, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// list reads every page of a metadata-only LIST.
func (s *Snapshots) list(ctx context.Context, resource schema.GroupVersionResource, namespace string, at time.Time) (*Snapshot, error) {
	snap := newSnapshot(at, s.seed)
	opts := metav1.ListOptions{Limit: snapshotPageSize}
	for {
		began := s.clock.Now()
		page, err := s.client.Resource(resource).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s in %q: %w", resource.GroupResource(), namespace, err)
		}
		s.costs.ObserveList(false, len(page.Items), s.clock.Since(began))
		for i := range page.Items {
			snap.add(page.Items[i].Name, page.Items[i].ResourceVersion)
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return snap, nil
		}
	}
}
