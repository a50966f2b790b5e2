package compare

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeClient is a target cluster in memory. Its dry run mimics server-side
// apply closely enough for the engine: the live object (server fields,
// status and fields of other managers included) with the desired fields
// merged in, maps merged and lists replaced.
type fakeClient struct {
	live     map[string]*unstructured.Unstructured
	getErr   map[string]error
	applyErr map[string]error
	// delay is waited before answering for an object (or until ctx ends).
	delay map[string]time.Duration
	// callDelay is waited in every call, to make calls overlap.
	callDelay time.Duration
	// dryRun, when set, replaces the SSA imitation.
	dryRun func(desired, live *unstructured.Unstructured) *unstructured.Unstructured
	// who is what Who answers.
	who string

	mu       sync.Mutex
	gets     map[string]int
	applies  map[string]int
	canceled map[string]bool

	inflight, maxInflight atomic.Int32
}

func newFake(live ...*unstructured.Unstructured) *fakeClient {
	f := &fakeClient{
		live:     map[string]*unstructured.Unstructured{},
		getErr:   map[string]error{},
		applyErr: map[string]error{},
		delay:    map[string]time.Duration{},
		gets:     map[string]int{},
		applies:  map[string]int{},
		canceled: map[string]bool{},
	}
	for _, o := range live {
		f.live[fakeKey(o.GroupVersionKind(), o.GetNamespace(), o.GetName())] = o
	}
	return f
}

var _ Cluster = (*fakeClient)(nil)

// Who implements Cluster.
func (f *fakeClient) Who() string { return f.who }

// ClusterName implements Cluster: the local cluster.
func (f *fakeClient) ClusterName() string { return "" }

// ResourceVersion implements Cluster: a fakeClient has no LIST, it cannot
// tell (cachingClient can).
func (f *fakeClient) ResourceVersion(context.Context, schema.GroupVersionKind, string, string) (string, bool, bool) {
	return "", false, false
}

// ReadAhead implements Cluster: a fakeClient reads nothing ahead
// (aheadClient records what it is given).
func (f *fakeClient) ReadAhead(context.Context, []*unstructured.Unstructured) {}

func fakeKey(gvk schema.GroupVersionKind, namespace, name string) string {
	return gvk.GroupKind().String() + " " + namespace + "/" + name
}

func keyOf(o *unstructured.Unstructured) string {
	return fakeKey(o.GroupVersionKind(), o.GetNamespace(), o.GetName())
}

// enter counts a call in flight and waits; it returns ctx's error when ctx
// ends first.
func (f *fakeClient) enter(ctx context.Context, key string) error {
	n := f.inflight.Add(1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	wait := f.callDelay + f.delay[key]
	if wait == 0 {
		return ctx.Err()
	}
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		f.canceled[key] = true
		f.mu.Unlock()
		return ctx.Err()
	}
}

func (f *fakeClient) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	key := fakeKey(gvk, namespace, name)
	f.mu.Lock()
	f.gets[key]++
	f.mu.Unlock()
	defer f.inflight.Add(-1)
	if err := f.enter(ctx, key); err != nil {
		return nil, err
	}
	if err := f.getErr[key]; err != nil {
		return nil, err
	}
	live, ok := f.live[key]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: "things"}, name)
	}
	return live, nil
}

func (f *fakeClient) DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	key := keyOf(obj)
	f.mu.Lock()
	f.applies[key]++
	f.mu.Unlock()
	defer f.inflight.Add(-1)
	if err := f.enter(ctx, key); err != nil {
		return nil, err
	}
	if err := f.applyErr[key]; err != nil {
		return nil, err
	}
	live := f.live[key]
	if f.dryRun != nil {
		return f.dryRun(obj, live), nil
	}
	return ssaImitation(obj, live), nil
}

func (f *fakeClient) getCount(o *unstructured.Unstructured) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[keyOf(o)]
}

func (f *fakeClient) applyCount(o *unstructured.Unstructured) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applies[keyOf(o)]
}

func (f *fakeClient) wasCanceled(o *unstructured.Unstructured) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canceled[keyOf(o)]
}

// ssaImitation returns live with desired merged in, and the server's own
// fields changed as a real dry run changes them.
func ssaImitation(desired, live *unstructured.Unstructured) *unstructured.Unstructured {
	var out *unstructured.Unstructured
	if live != nil {
		out = live.DeepCopy()
		merge(out.Object, desired.DeepCopy().Object)
	} else {
		out = desired.DeepCopy()
	}
	out.SetResourceVersion("999")
	out.SetGeneration(out.GetGeneration() + 1)
	out.SetManagedFields(nil)
	out.Object["metadata"].(map[string]any)["managedFields"] = []any{
		map[string]any{"manager": "convoy", "operation": "Apply", "time": "2026-08-01T00:00:00Z"},
	}
	return out
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
