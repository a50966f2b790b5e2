package observer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/fairqueue"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/park"
)

// The readyz check "observer": a replica that should run the loops is not
// ready until they run; one that does not lead is.
func TestReady(t *testing.T) {
	elected := New(Config{LeaderElection: componentbaseconfig.LeaderElectionConfiguration{LeaderElect: true}})
	assert.NoError(t, elected.Ready(), "a replica that does not lead serves the API")
	elected.setLeading(true)
	assert.ErrorContains(t, elected.Ready(), "not running")
	elected.running.Store(true)
	assert.NoError(t, elected.Ready())
	elected.running.Store(false)
	elected.setLeading(false)
	assert.NoError(t, elected.Ready())

	alone := New(Config{})
	assert.Error(t, alone.Ready(), "without leader election the loops must run")
	alone.running.Store(true)
	assert.NoError(t, alone.Ready())
}

// listerOf is a lister of the Releases shop/NAME.
func listerOf(names ...string) convoylisters.ReleaseLister {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, name := range names {
		_ = indexer.Add(&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}})
	}
	return convoylisters.NewReleaseLister(indexer)
}

// The queue reads the Release of a key: a Release that is gone is
// forgotten and one being deleted skipped, both without a pass; a pass gets
// a deadline.
func TestPassQueueReadsTheRelease(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	now := metav1.Now()
	for _, r := range []*convoyv1alpha1.Release{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "leaving", DeletionTimestamp: &now}},
	} {
		require.NoError(t, indexer.Add(r))
	}
	lister := convoylisters.NewReleaseLister(indexer)
	var passed, forgotten []string
	q := newPassQueue("test", lister, func(ctx context.Context, release *convoyv1alpha1.Release, _ passOptions) (time.Duration, error) {
		_, hasDeadline := ctx.Deadline()
		assert.True(t, hasDeadline, "a pass has a timeout")
		passed = append(passed, release.Name)
		return 0, nil
	})
	q.forget = func(key cache.ObjectName) { forgotten = append(forgotten, key.Name) }
	defer q.queue.ShutDown()
	for _, name := range []string{"web", "leaving", "gone"} {
		q.queue.Add(cache.ObjectName{Namespace: "shop", Name: name})
		assert.True(t, q.processNext(context.Background()))
	}
	assert.Equal(t, []string{"web"}, passed)
	assert.Equal(t, []string{"gone"}, forgotten)
}

// A panic in a pass ends that pass; the worker goes on with the next
// Release, and the panic is counted.
func TestPassQueueSurvivesAPanic(t *testing.T) {
	var passed []string
	q := newPassQueue("test", listerOf("bad", "good"), func(_ context.Context, release *convoyv1alpha1.Release, _ passOptions) (time.Duration, error) {
		if release.Name == "bad" {
			panic("injected panic")
		}
		passed = append(passed, release.Name)
		return 0, nil
	})
	defer q.queue.ShutDown()
	RegisterMetrics() // unregistered metrics count nothing
	before, _ := testutil.GetCounterMetricValue(panics.WithLabelValues("test"))
	q.queue.Add(cache.ObjectName{Namespace: "shop", Name: "bad"})
	q.queue.Add(cache.ObjectName{Namespace: "shop", Name: "good"})
	ctx := context.Background()
	assert.True(t, q.processNext(ctx))
	assert.True(t, q.processNext(ctx))
	assert.Equal(t, []string{"good"}, passed)
	after, _ := testutil.GetCounterMetricValue(panics.WithLabelValues("test"))
	assert.Equal(t, before+1, after)
	assert.Equal(t, 1, q.queue.NumRequeues(cache.ObjectName{Namespace: "shop", Name: "bad"}), "retried with backoff")
}

// listedAfterQueue is a queue of the Release shop/web whose passes record
// the listedAfter of their options in got.
func listedAfterQueue(t *testing.T) (q passQueue, got *[]time.Time, release *metav1.ObjectMeta) {
	got = &[]time.Time{}
	q = newPassQueue("test", listerOf("web"), func(_ context.Context, _ *convoyv1alpha1.Release, opts passOptions) (time.Duration, error) {
		*got = append(*got, opts.listedAfter)
		return 0, nil
	})
	t.Cleanup(q.queue.ShutDown)
	return q, got, &metav1.ObjectMeta{Namespace: "shop", Name: "web"}
}

// A pass enqueued by an event reads through LISTs sent after the event; a
// pass that was only due (its interval, a re-check) shares any fresh LIST.
func TestPassAfterAnEventWantsANewerList(t *testing.T) {
	q, got, release := listedAfterQueue(t)
	ctx := context.Background()

	before := time.Now()
	q.enqueue(release)
	assert.True(t, q.processNext(ctx))
	q.queue.Add(cache.ObjectName{Namespace: "shop", Name: "web"}) // as AddAfter does when due
	assert.True(t, q.processNext(ctx))

	require.Len(t, *got, 2)
	assert.False(t, (*got)[0].Before(before), "after the event")
	assert.False(t, (*got)[0].After(time.Now()))
	assert.True(t, (*got)[1].IsZero(), "a pass that was only due has no event to follow")
}

// The retry of a failed pass that followed an event still follows it.
func TestRetryOfAPassAfterAnEventWantsANewerList(t *testing.T) {
	var got []time.Time
	q := newPassQueue("test", listerOf("web"), func(_ context.Context, _ *convoyv1alpha1.Release, opts passOptions) (time.Duration, error) {
		got = append(got, opts.listedAfter)
		if len(got) == 1 {
			return 0, errors.New("the cluster did not answer")
		}
		return 0, nil
	})
	defer q.queue.ShutDown()
	ctx := context.Background()

	q.enqueue(&metav1.ObjectMeta{Namespace: "shop", Name: "web"})
	assert.True(t, q.processNext(ctx))
	assert.True(t, q.processNext(ctx)) // the retry, after its backoff

	require.Len(t, got, 2)
	assert.False(t, got[0].IsZero())
	assert.Equal(t, got[0], got[1], "the retry follows the same event")
}

// A pass that parks gives its worker back without a retry: the end of the
// request it waits for starts its next pass, which gets the request's
// result and still follows the event; its Spot then goes. The health
// loop's passes park nothing.
func TestParkedPassRunsAgainWhenWoken(t *testing.T) {
	result := make(chan singleflight.Result, 1)
	var got []any
	var listedAfter []time.Time
	q := newPassQueue("test", listerOf("web"), func(ctx context.Context, _ *convoyv1alpha1.Release, opts passOptions) (time.Duration, error) {
		listedAfter = append(listedAfter, opts.listedAfter)
		// As drift.Checker.Check puts its Options.Spot.
		res, err := park.Wait(park.WithSpot(ctx, opts.spot), "resolve", func() <-chan singleflight.Result { return result })
		if err != nil {
			return 0, err
		}
		got = append(got, res.Val)
		return time.Hour, nil
	})
	defer q.queue.ShutDown()
	q.spots = newSpots(time.Millisecond, q.queue.Add)
	key := cache.ObjectName{Namespace: "shop", Name: "web"}
	ctx := context.Background()

	q.enqueue(&metav1.ObjectMeta{Namespace: "shop", Name: "web"})
	assert.True(t, q.processNext(ctx))
	assert.Empty(t, got)
	assert.Zero(t, q.queue.Len(), "nothing waits: the pass parked")
	assert.Zero(t, q.queue.NumRequeues(key), "no retry with backoff")
	assert.Equal(t, 1, q.spots.parked())

	result <- singleflight.Result{Val: "sha256:abc"}
	require.Eventually(t, func() bool { return q.queue.Len() == 1 }, time.Minute, time.Millisecond, "the wake adds the Release")
	assert.True(t, q.processNext(ctx))
	assert.Equal(t, []any{"sha256:abc"}, got)
	require.Len(t, listedAfter, 2)
	assert.False(t, listedAfter[0].IsZero())
	assert.Equal(t, listedAfter[0], listedAfter[1], "the pass after the wake follows the event")
	assert.Empty(t, q.spots.at, "the Spot goes once its pass ran to its end")

	health := newPassQueue("health", listerOf("web"), func(ctx context.Context, _ *convoyv1alpha1.Release, opts passOptions) (time.Duration, error) {
		assert.Nil(t, opts.spot, "no Spot to park on")
		_, err := park.Wait(ctx, "read", func() <-chan singleflight.Result {
			ch := make(chan singleflight.Result, 1)
			time.AfterFunc(20*time.Millisecond, func() { ch <- singleflight.Result{} })
			return ch
		})
		return 0, err
	})
	defer health.queue.ShutDown()
	health.queue.Add(key)
	assert.True(t, health.processNext(ctx))
	assert.Zero(t, health.queue.NumRequeues(key), "without spots a pass waits")
}

// The namespaces take turns for the workers, and one runs on half of them
// (rounded up) while another's passes wait.
func TestPassQueueTakesTurnsByNamespace(t *testing.T) {
	for workers, share := range map[int]int{1: 1, 2: 1, 3: 2, 4: 2, 16: 8} {
		assert.Equal(t, share, shareOf(workers), "%d workers", workers)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	keys := []cache.ObjectName{{Namespace: "a", Name: "1"}, {Namespace: "a", Name: "2"}, {Namespace: "a", Name: "3"}, {Namespace: "b", Name: "1"}}
	for _, k := range keys {
		require.NoError(t, indexer.Add(&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}))
	}
	var passed []string
	q := newPassQueue("test", convoylisters.NewReleaseLister(indexer), func(_ context.Context, release *convoyv1alpha1.Release, _ passOptions) (time.Duration, error) {
		passed = append(passed, release.Namespace+"/"+release.Name)
		return 0, nil
	})
	defer q.queue.ShutDown()
	for _, k := range keys {
		q.queue.Add(k)
	}
	for range keys {
		assert.True(t, q.processNext(context.Background()))
	}
	assert.Equal(t, []string{"a/1", "b/1", "a/2", "a/3"}, passed)
	assert.Equal(t, fairqueue.Stats{}, q.fair.Stats(), "nothing waits or runs")
}

// A pass after an event that changed only what it expects shares any fresh
// LIST; it does not take away the time of an event after which the cluster
// may have changed and whose pass has not run yet.
func TestPassSharingListsFollowsNoEvent(t *testing.T) {
	q, got, release := listedAfterQueue(t)
	ctx := context.Background()

	q.add(release, shareLists)
	assert.True(t, q.processNext(ctx))
	q.add(release, listAgain)
	q.add(release, shareLists) // the same pass
	assert.True(t, q.processNext(ctx))
	q.add(release, noPass)
	assert.Zero(t, q.queue.Len(), "noPass enqueues nothing")

	require.Len(t, *got, 2)
	assert.True(t, (*got)[0].IsZero(), "a new spec alone shares fresh LISTs")
	assert.False(t, (*got)[1].IsZero(), "the sync's event still counts")
}

// Which updates of a Release start a pass of each loop, and how.
func TestReleaseUpdateTriggers(t *testing.T) {
	release := func(rv string, generation int64, attempted string) *convoyv1alpha1.Release {
		r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Generation: generation}}
		if attempted != "" {
			r.Status.LastAttempted = &convoyv1alpha1.RenderRecord{RenderRef: attempted}
		}
		return r
	}
	tests := []struct {
		name          string
		old, cur      *convoyv1alpha1.Release
		drift, health trigger
	}{
		{"the informer's resync", release("5", 2, "a"), release("5", 2, "a"), listAgain, listAgain},
		{"a new spec", release("5", 2, "a"), release("6", 3, "a"), shareLists, shareLists},
		{"a sync attempt", release("5", 2, "a"), release("6", 2, "b"), noPass, listAgain},
		{"a first sync attempt", release("5", 2, ""), release("6", 2, "a"), noPass, listAgain},
		{"a new spec and a sync attempt", release("5", 2, "a"), release("6", 3, "b"), shareLists, listAgain},
		{"another status write", release("5", 2, "a"), release("6", 2, "a"), noPass, noPass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.drift, driftTrigger(tt.old, tt.cur), "drift")
			assert.Equal(t, tt.health, healthTrigger(tt.old, tt.cur), "health")
		})
	}
}

// The informers keep no managedFields; a tombstone passes as it is.
func TestStripManagedFields(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "convoy-observe"}}},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web"}}}}
	got, err := stripManagedFields(release)
	require.NoError(t, err)
	assert.Nil(t, got.(*convoyv1alpha1.Release).ManagedFields)
	assert.Equal(t, "web", got.(*convoyv1alpha1.Release).Spec.Source.ConfigMap.Name, "the rest is kept")

	tombstone := cache.DeletedFinalStateUnknown{Key: "shop/web", Obj: release}
	got, err = stripManagedFields(tombstone)
	require.NoError(t, err)
	assert.Equal(t, tombstone, got)
}
