package cluster

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy-apiserver/pkg/agecache"
)

// FullListCostRatio is how many objects of a LIST of whole objects cost
// about as much kube-apiserver work as one GET of one of them, until Costs
// has measured it on the cluster (see "One check" in
// docs/contributors/performance.md for what was measured on one machine).
// It is lower than ListCostRatio: a whole object is serialized, not only
// its metadata.
const FullListCostRatio = 10

// Bounds of a read-ahead: a page of a LIST, and how long and how many
// collection sizes a Target remembers.
const (
	readAheadPageSize = 500
	maxCollections    = 1024
	collectionMaxAge  = 10 * time.Minute
)

// unlistable is the size remembered of a collection the identity may not
// LIST: its objects are read one by one.
const unlistable = -1

// Collections remembers how many objects a resource held in a namespace,
// as the read-aheads of the passes found it, so that a pass does not LIST a
// collection too large to be worth it (a namespace of 75,000 ConfigMaps for
// the 14 of one Release) more than once per collectionMaxAge.
type Collections struct {
	sizes *agecache.Cache[snapshotKey, int]
}

// NewCollections returns an empty Collections.
func NewCollections(clk clock.PassiveClock) *Collections {
	return &Collections{sizes: agecache.New[snapshotKey, int](maxCollections, collectionMaxAge, clk, nil)}
}

// readAhead is what a read-ahead of one pass read: the objects it found by
// (resource, namespace) and name, and whether a collection was listed whole
// (an object it did not see does not exist).
type readAhead struct {
	mu      sync.Mutex
	objects map[snapshotKey]map[string]*unstructured.Unstructured
	whole   map[snapshotKey]bool
}

// ReadAhead reads the objects of a Release (objects: the desired ones, for
// their kind, namespace and name) with one LIST per resource and namespace
// where that costs less than a GET per object, before the pass reads them one
// by one: the rule, and what bounds it, are in docs/contributors/internals.md
// ("Reading ahead"). Get then answers what the LISTs saw, and NotFound for an
// object of a collection listed whole that they did not. Errors are not
// returned: the reads one by one report them.
func (r *Reader) ReadAhead(ctx context.Context, objects []*unstructured.Unstructured) {
	groups := map[snapshotKey]map[string]bool{}
	for _, obj := range objects {
		mapping, err := r.Mapping(obj.GroupVersionKind())
		if err != nil {
			continue
		}
		key := snapshotKey{resource: mapping.Resource}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			key.namespace = obj.GetNamespace()
			if key.namespace == "" {
				continue
			}
		}
		if groups[key] == nil {
			groups[key] = map[string]bool{}
		}
		groups[key][obj.GetName()] = true
	}
	ahead := &readAhead{objects: map[snapshotKey]map[string]*unstructured.Unstructured{}, whole: map[snapshotKey]bool{}}
	ratio, _ := r.costs.FullListRatio()
	var wg sync.WaitGroup
	for key, names := range groups {
		budget := len(names) * ratio
		if len(names) < 2 || r.knownSize(key) > budget || r.knownSize(key) == unlistable {
			continue // a GET per object costs less
		}
		wg.Go(func() { ahead.list(ctx, r, key, names, budget) })
	}
	wg.Wait()
	r.ahead = ahead
}

// knownSize is the size of the collection key as last listed, 0 when
// unknown.
func (r *Reader) knownSize(key snapshotKey) int {
	if r.collections == nil {
		return 0
	}
	n, _ := r.collections.sizes.Get(key)
	return n
}

// list reads the collection key page by page, keeps the objects named in
// names, and stops once it has read budget objects.
func (a *readAhead) list(ctx context.Context, r *Reader, key snapshotKey, names map[string]bool, budget int) {
	ri := r.dynamic.Resource(key.resource).Namespace(key.namespace)
	opts := metav1.ListOptions{Limit: int64(min(budget, readAheadPageSize))}
	found := map[string]*unstructured.Unstructured{}
	listed := 0
	for {
		began := r.clock.Now()
		page, err := ri.List(ctx, opts)
		if err != nil {
			tooLarge := isTooLarge(err)
			if tooLarge {
				klog.FromContext(ctx).Info("A page of a read-ahead LIST is too large: the objects are read one by one",
					"cluster", r.cluster, "resource", key.resource.GroupResource(), "namespace", key.namespace, "reason", ReasonResponseTooLarge, "err", err.Error())
			}
			// A page over the limit would be as large at the next pass:
			// like a refusal, it is not tried again for collectionMaxAge.
			if (apierrors.IsForbidden(err) || tooLarge) && r.collections != nil {
				r.collections.sizes.Put(key, unlistable)
			}
			break
		}
		r.costs.ObserveList(true, len(page.Items), r.clock.Since(began))
		for i := range page.Items {
			if names[page.Items[i].GetName()] {
				found[page.Items[i].GetName()] = &page.Items[i]
			}
		}
		listed += len(page.Items)
		opts.Continue = page.GetContinue()
		if opts.Continue == "" {
			if r.collections != nil {
				r.collections.sizes.Put(key, listed)
			}
			a.mu.Lock()
			a.whole[key] = true
			a.mu.Unlock()
			break
		}
		if listed >= budget {
			// Larger than it is worth: remember it, read the rest one by one.
			size := listed + 1
			if rest := page.GetRemainingItemCount(); rest != nil {
				size = listed + int(*rest)
			}
			if r.collections != nil {
				r.collections.sizes.Put(key, size)
			}
			break
		}
		opts.Limit = int64(min(budget-listed, readAheadPageSize))
	}
	a.mu.Lock()
	a.objects[key] = found
	a.mu.Unlock()
}

// get answers a read of name in the collection key from the read-ahead:
// the object, or a NotFound error when the collection was listed whole
// without it; ok is false when the read-ahead cannot tell.
func (a *readAhead) get(key snapshotKey, name string) (*unstructured.Unstructured, error, bool) {
	if a == nil {
		return nil, nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if obj, ok := a.objects[key][name]; ok {
		return obj, nil, true
	}
	if a.whole[key] {
		return nil, apierrors.NewNotFound(key.resource.GroupResource(), name), true
	}
	return nil, nil, false
}
