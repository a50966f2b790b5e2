package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func partial(namespace, name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv},
	}
}

func TestSnapshotsAreSharedWithinTheFreshnessWindow(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme, partial("shop", "a", "1"), partial("shop", "b", "2"), partial("other", "c", "3"))
	var lists atomic.Int32
	listed := make(chan struct{})
	client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		<-listed
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	s := NewSnapshots(client, 5*time.Second, clk)
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			snap, err := s.Get(ctx, configMaps, "shop")
			assert.NoError(t, err)
			rv, ok := snap.ResourceVersion("b")
			assert.True(t, ok)
			assert.Equal(t, "2", rv)
			_, ok = snap.ResourceVersion("c")
			assert.False(t, ok, "another namespace")
		})
	}
	// Every pass asks while the LIST is in flight.
	waitEntry(t, s, func(e *snapshotEntry) bool { return e.asked == 8 })
	close(listed)
	wg.Wait()
	assert.Equal(t, int32(1), lists.Load(), "eight passes, one LIST")

	clk.SetTime(clk.Now().Add(4 * time.Second))
	_, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err)
	assert.Equal(t, int32(1), lists.Load(), "still fresh")
	_, err = s.Get(ctx, configMaps, "other")
	require.NoError(t, err)
	assert.Equal(t, int32(2), lists.Load(), "another namespace has its own")

	clk.SetTime(clk.Now().Add(2 * time.Second))
	snap, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err)
	assert.Equal(t, int32(3), lists.Load(), "past the window: a new LIST")
	assert.Equal(t, 2, snap.Len())
}

func TestSnapshotsKeepAnErrorForTheWindow(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme)
	var lists atomic.Int32
	client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("may not list"))
	})
	s := NewSnapshots(client, time.Minute, clocktesting.NewFakePassiveClock(time.Now()))
	for range 3 {
		_, err := s.Get(context.Background(), configMaps, "shop")
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
	}
	assert.Equal(t, int32(1), lists.Load())
}

// A namespace of many objects is read page by page, as metadata only.
func TestSnapshotsReadEveryPage(t *testing.T) {
	pages := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/v1/namespaces/shop/configmaps", r.URL.Path)
		assert.Equal(t, fmt.Sprint(snapshotPageSize), r.URL.Query().Get("limit"))
		assert.Contains(t, r.Header.Get("Accept"), "as=PartialObjectMetadataList")
		assert.Equal(t, fmt.Sprint(pages), cmp.Or(r.URL.Query().Get("continue"), "0"))
		pages++
		next := ""
		if pages < 3 {
			next = fmt.Sprint(pages)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":%q},
			"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cm-%d","namespace":"shop","resourceVersion":"%d"}}]}`, next, pages, pages)
	}))
	t.Cleanup(srv.Close)
	client, err := metadata.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	snap, err := NewSnapshots(client, time.Minute, clocktesting.NewFakePassiveClock(time.Now())).Get(context.Background(), configMaps, "shop")
	require.NoError(t, err)
	assert.Equal(t, 3, snap.Len())
	rv, ok := snap.ResourceVersion("cm-3")
	assert.True(t, ok)
	assert.Equal(t, "3", rv)
}

// A LIST in flight is joined, however long it takes: never two at once; its
// window starts when it ends.
func TestSnapshotsJoinTheListInFlight(t *testing.T) {
	s, clk, lists, gate, get := gatedSnapshots(t)
	ctx := context.Background()

	first := get(ctx)
	require.Eventually(t, func() bool { return lists.Load() == 1 }, 10*time.Second, time.Millisecond)
	clk.SetTime(clk.Now().Add(time.Minute)) // far past the window, the LIST still in flight
	second := get(ctx)
	waitEntry(t, s, func(e *snapshotEntry) bool { return e.asked == 2 })
	close(gate)
	a, b := <-first, <-second
	assert.Same(t, a, b)
	assert.Equal(t, int32(1), lists.Load(), "the second pass waited for the first LIST")

	// The window starts when the LIST ends: a LIST that took longer than
	// the window is still shared after it.
	clk.SetTime(clk.Now().Add(4 * time.Second))
	c, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err)
	assert.Same(t, a, c)
	assert.Equal(t, int32(1), lists.Load())
}

// A pass that follows a change gets a LIST sent after it: a fresh LIST
// sent before is not shared with it, one in flight is waited for (never two
// at once) and then a newer one is sent; reads one by one are fresh anyway.
func TestSnapshotsListedAfterAChange(t *testing.T) {
	s, clk, lists, gate, get := gatedSnapshots(t)
	ctx := context.Background()

	// A LIST in flight, sent at 0s; a change at 1s.
	first := get(ctx)
	require.Eventually(t, func() bool { return lists.Load() == 1 }, 10*time.Second, time.Millisecond)
	clk.SetTime(clk.Now().Add(time.Second))
	changed := WithListedAfter(ctx, clk.Now())
	second := get(changed)
	waitEntry(t, s, func(e *snapshotEntry) bool { return e.outdated == 1 })
	assert.Equal(t, int32(1), lists.Load(), "the pass after the change waits for the LIST in flight")
	gate <- struct{}{}
	a := <-first
	require.Eventually(t, func() bool { return lists.Load() == 2 }, 10*time.Second, time.Millisecond, "then sends a newer one")
	gate <- struct{}{}
	b := <-second
	assert.NotSame(t, a, b)
	assert.Equal(t, clk.Now(), b.At)

	// Both fresh now: a pass after the same change, and one without a
	// change, share the newer LIST.
	assert.Same(t, b, <-get(changed))
	assert.Same(t, b, <-get(ctx))
	// A change after it: a third LIST, though the second is fresh.
	clk.SetTime(clk.Now().Add(time.Second))
	gate <- struct{}{}
	c := <-get(WithListedAfter(ctx, clk.Now()))
	assert.NotSame(t, b, c)
	assert.Equal(t, int32(3), lists.Load())
}

// A namespace is listed only while the passes ask about enough of its
// objects; else they read them one by one, and it is listed again once
// they ask about more.
func TestSnapshotsListOnlyWhenItIsWorthIt(t *testing.T) {
	s, lists, window := countedSnapshots(t, 4*ListCostRatio)
	ctx := context.Background()

	snap, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err, "the first window lists: nothing is known yet")
	assert.Equal(t, 4*ListCostRatio, snap.Len())

	// One lookup in that window, for 200 objects: not worth a LIST.
	window()
	_, err = s.Get(ctx, configMaps, "shop")
	assert.ErrorIs(t, err, ErrNotWorthListing)
	for range 3 {
		_, err = s.Get(ctx, configMaps, "shop")
		assert.ErrorIs(t, err, ErrNotWorthListing, "the whole window reads one by one")
	}
	assert.Equal(t, int32(1), lists.Load())

	// Four lookups in that window: 4 × ListCostRatio objects, worth a LIST.
	window()
	snap, err = s.Get(ctx, configMaps, "shop")
	require.NoError(t, err)
	assert.Equal(t, 4*ListCostRatio, snap.Len())
	assert.Equal(t, int32(2), lists.Load())
}

// Lookups read one by one count over windows: once they cost as much as the
// last LIST, the next window lists again, however few each window asked
// about (reading one by one slows the passes, so one window's demand
// understates what they need).
func TestSnapshotsListAgainOnceTheReadsOneByOneCostAsMuch(t *testing.T) {
	s, lists, window := countedSnapshots(t, 3*ListCostRatio)
	ctx := context.Background()

	_, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err)
	// One lookup per window: never worth a LIST by the window's demand,
	// but three reads one by one cost one LIST of 3 × ListCostRatio.
	for i := range 3 {
		window()
		_, err = s.Get(ctx, configMaps, "shop")
		assert.ErrorIs(t, err, ErrNotWorthListing, "window %d", i)
	}
	assert.Equal(t, int32(1), lists.Load())
	window()
	snap, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err, "the reads one by one cost as much as a LIST")
	assert.Equal(t, 3*ListCostRatio, snap.Len())
	assert.Equal(t, int32(2), lists.Load())

	// The count starts again after that LIST.
	window()
	_, err = s.Get(ctx, configMaps, "shop")
	assert.ErrorIs(t, err, ErrNotWorthListing)
	assert.Equal(t, int32(2), lists.Load())
}

// Once listing, the windows go on listing until the demand halves; a
// window after reads one by one needs the whole demand. So a demand near
// the threshold does not flip between the two.
func TestSnapshotsKeepListingUntilTheDemandHalves(t *testing.T) {
	// A LIST is worth 40 lookups in a window.
	s, lists, window := countedSnapshots(t, 40*ListCostRatio)
	ctx := context.Background()
	ask := func(n int) (err error) {
		for range n {
			_, err = s.Get(ctx, configMaps, "shop")
		}
		return err
	}

	require.NoError(t, ask(20), "the first window lists")
	window()
	require.NoError(t, ask(19), "20 lookups after a LIST: half of 40, still listing")
	assert.Equal(t, int32(2), lists.Load())
	window()
	assert.ErrorIs(t, ask(30), ErrNotWorthListing, "19: less than half")
	window()
	assert.ErrorIs(t, ask(1), ErrNotWorthListing, "30 after reads one by one: less than 40")
	assert.Equal(t, int32(2), lists.Load())
}

// A window that reads one by one ends as soon as its reads cost as much as
// a LIST: a burst of passes after a quiet time lists within the window.
func TestSnapshotsListWithinTheWindowOnceTheReadsCostAsMuch(t *testing.T) {
	s, lists, window := countedSnapshots(t, 3*ListCostRatio)
	ctx := context.Background()

	_, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err)
	window()
	for i := range 3 {
		_, err = s.Get(ctx, configMaps, "shop")
		assert.ErrorIs(t, err, ErrNotWorthListing, "read %d", i)
	}
	assert.Equal(t, int32(1), lists.Load())
	snap, err := s.Get(ctx, configMaps, "shop")
	require.NoError(t, err, "three reads one by one cost a LIST of 3 × ListCostRatio: listed in the same window")
	assert.Equal(t, 3*ListCostRatio, snap.Len())
	assert.Equal(t, int32(2), lists.Load())
}

// waitEntry waits until the entry of the ConfigMaps of "shop" is there and
// cond holds for it.
func waitEntry(t *testing.T, s *Snapshots, cond func(*snapshotEntry) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		v, ok := s.entries.Get(snapshotKey{resource: configMaps, namespace: "shop"})
		return ok && cond(v.(*snapshotEntry))
	}, 10*time.Second, time.Millisecond)
}

// gatedSnapshots returns Snapshots of a namespace "shop" whose LISTs each
// wait for a token on gate (or its close), with a fake clock, the count of
// LISTs sent, and get, which asks for the Snapshot in a goroutine. Two LISTs
// in flight at once fail the test.
func gatedSnapshots(t *testing.T) (*Snapshots, *clocktesting.FakePassiveClock, *atomic.Int32, chan struct{}, func(context.Context) <-chan *Snapshot) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme, partial("shop", "a", "1"))
	var lists, inFlight atomic.Int32
	gate := make(chan struct{}, 10)
	client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		if inFlight.Add(1) > 1 {
			t.Error("two LISTs in flight")
		}
		defer inFlight.Add(-1)
		lists.Add(1)
		<-gate
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	s := NewSnapshots(client, 5*time.Second, clk)
	get := func(ctx context.Context) <-chan *Snapshot {
		out := make(chan *Snapshot, 1)
		go func() {
			snap, err := s.Get(ctx, configMaps, "shop")
			assert.NoError(t, err)
			out <- snap
		}()
		return out
	}
	return s, clk, &lists, gate, get
}

// countedSnapshots returns Snapshots of a namespace "shop" of n ConfigMaps
// that share a LIST for 5s, the count of LISTs sent, and a function that
// moves the clock past the window.
func countedSnapshots(t *testing.T, n int) (*Snapshots, *atomic.Int32, func()) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, partial("shop", fmt.Sprintf("cm-%d", i), "1"))
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	lists := &atomic.Int32{}
	client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	window := func() { clk.SetTime(clk.Now().Add(6 * time.Second)) }
	return NewSnapshots(client, 5*time.Second, clk), lists, window
}

// A Snapshot answers every resourceVersion exactly as the LIST said it,
// numbers (kept as numbers) and anything else alike.
func TestSnapshotResourceVersions(t *testing.T) {
	snap := newSnapshot(time.Now(), maphash.MakeSeed())
	listed := map[string]string{
		"number":                                "123456789",
		"large":                                 "18446744073709551615",
		"too large":                             "18446744073709551616",
		"leading zero":                          "0042",
		"zero":                                  "0",
		"not a number":                          "abc",
		"signed":                                "+7",
		"empty":                                 "",
		"long name " + strings.Repeat("x", 200): "5",
	}
	for name, rv := range listed {
		snap.add(name, rv)
	}
	assert.Equal(t, len(listed), snap.Len())
	for name, rv := range listed {
		got, ok := snap.ResourceVersion(name)
		assert.True(t, ok, name)
		assert.Equal(t, rv, got, name)
	}
	_, ok := snap.ResourceVersion("not listed")
	assert.False(t, ok)
}

// A LIST that took long is shared for listWindowFactor times as long as it
// took, when that is longer than the freshness window; a short one for the
// window.
func TestSnapshotsShareASlowListLonger(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme, partial("shop", "a", "1"))
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	var lists atomic.Int32
	took := 10 * time.Second
	client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		clk.SetTime(clk.Now().Add(took))
		return false, nil, nil
	})
	s := NewSnapshots(client, 5*time.Second, clk)
	ctx := context.Background()
	get := func() {
		_, err := s.Get(ctx, configMaps, "shop")
		require.NoError(t, err)
	}
	get()
	clk.SetTime(clk.Now().Add(39 * time.Second))
	get()
	assert.Equal(t, int32(1), lists.Load(), "a LIST of 10s is shared for 40s")
	took = time.Second
	clk.SetTime(clk.Now().Add(2 * time.Second))
	get()
	assert.Equal(t, int32(2), lists.Load(), "past 40s")
	clk.SetTime(clk.Now().Add(4 * time.Second))
	get()
	assert.Equal(t, int32(2), lists.Load(), "a LIST of 1s is shared for the window of 5s")
	clk.SetTime(clk.Now().Add(2 * time.Second))
	get()
	assert.Equal(t, int32(3), lists.Load())
}
