package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
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
// resourceVersions, at a time. It keeps nothing else of them.
type Snapshot struct {
	// At is when the LIST was sent.
	At       time.Time
	versions map[string]string
}

// ResourceVersion returns the resourceVersion of the object name, and
// whether the LIST saw it.
func (s *Snapshot) ResourceVersion(name string) (string, bool) {
	rv, ok := s.versions[name]
	return rv, ok
}

// Len is the number of objects the LIST saw.
func (s *Snapshot) Len() int { return len(s.versions) }

// Snapshots reads and shares Snapshots of one cluster as one identity: the
// first pass that asks for (resource, namespace) sends the LIST, the passes
// that ask within the freshness window (also while it is in flight) get the
// same Snapshot. So a round over a thousand Releases in one namespace sends
// a LIST per resource per window instead of a GET per object. The target
// cluster is not watched. An error (the identity may not list) is kept for
// the window too, and the caller reads objects one by one.
type Snapshots struct {
	client    metadata.Interface
	freshness time.Duration
	clock     clock.PassiveClock

	mu      sync.Mutex
	entries *lru.Cache // snapshotKey → *snapshotEntry
}

type snapshotKey struct {
	resource  schema.GroupVersionResource
	namespace string
}

type snapshotEntry struct {
	done chan struct{} // closed when the LIST is done
	at   time.Time
	snap *Snapshot
	err  error
}

// NewSnapshots returns Snapshots that LIST with client and share each for
// freshness.
func NewSnapshots(client metadata.Interface, freshness time.Duration, clk clock.PassiveClock) *Snapshots {
	return &Snapshots{client: client, freshness: freshness, clock: clk, entries: lru.New(maxSnapshots)}
}

// Get returns a Snapshot of resource in namespace ("" for a cluster-scoped
// resource) no older than the freshness window.
func (s *Snapshots) Get(ctx context.Context, resource schema.GroupVersionResource, namespace string) (*Snapshot, error) {
	key := snapshotKey{resource: resource, namespace: namespace}
	now := s.clock.Now()
	s.mu.Lock()
	if v, ok := s.entries.Get(key); ok {
		e := v.(*snapshotEntry)
		if now.Sub(e.at) < s.freshness {
			s.mu.Unlock()
			select {
			case <-e.done:
				return e.snap, e.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	e := &snapshotEntry{done: make(chan struct{}), at: now}
	s.entries.Add(key, e)
	s.mu.Unlock()

	e.snap, e.err = s.list(ctx, resource, namespace, now)
	close(e.done)
	return e.snap, e.err
}

// list reads every page of a metadata-only LIST.
func (s *Snapshots) list(ctx context.Context, resource schema.GroupVersionResource, namespace string, at time.Time) (*Snapshot, error) {
	snap := &Snapshot{At: at, versions: map[string]string{}}
	opts := metav1.ListOptions{Limit: snapshotPageSize}
	for {
		page, err := s.client.Resource(resource).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s in %q: %w", resource.GroupResource(), namespace, err)
		}
		for i := range page.Items {
			snap.versions[page.Items[i].Name] = page.Items[i].ResourceVersion
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return snap, nil
		}
	}
}
