package observer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/park"
)

func TestPassLateness(t *testing.T) {
	d := &dueTimes{at: map[cache.ObjectName]time.Time{}}
	now := time.Now()
	assert.Zero(t, d.lateness(now), "nothing due")
	d.set(cache.ObjectName{Namespace: "a", Name: "x"}, now.Add(time.Minute))
	assert.Zero(t, d.lateness(now), "due later")
	d.set(cache.ObjectName{Namespace: "a", Name: "y"}, now.Add(-90*time.Second))
	d.set(cache.ObjectName{Namespace: "a", Name: "z"}, now.Add(-30*time.Second))
	assert.Equal(t, 90*time.Second, d.lateness(now), "the most overdue")
	d.clear(cache.ObjectName{Namespace: "a", Name: "y"})
	assert.Equal(t, 30*time.Second, d.lateness(now), "its pass started")
}

func TestLeaderTransitions(t *testing.T) {
	RegisterMetrics()
	before, err := testutil.GetCounterMetricValue(leaderTransitions)
	require.NoError(t, err)
	SetLeader(true)
	SetLeader(true)
	SetLeader(false)
	SetLeader(false)
	after, err := testutil.GetCounterMetricValue(leaderTransitions)
	require.NoError(t, err)
	assert.Equal(t, 2.0, after-before, "a change counts, a repeat does not")
}

// TestReleaseCollector: the conditions, self-heal and objects of the
// Releases, and each loop's lateness and wait, while the loops run; nothing
// before.
func TestReleaseCollector(t *testing.T) {
	names := []string{"convoy_release_condition", "convoy_release_selfheal_backing_off", "convoy_observer_objects", "convoy_observer_pass_lateness_seconds",
		"convoy_observer_namespaces_at_share", "convoy_observer_passes_parked"}
	// A collector registers once: a fresh one per comparison.
	require.NoError(t, testutil.CustomCollectAndCompare(&releaseCollector{}, strings.NewReader(""), names...), "not running: nothing")

	rels := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	invs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, rels.Add(&convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Status: convoyv1alpha1.ReleaseStatus{
			Conditions: []metav1.Condition{{Type: "InSync", Status: metav1.ConditionFalse, Reason: "Drifted"}},
			SelfHeal:   &convoyv1alpha1.SelfHealStatus{Backoff: &metav1.Duration{Duration: time.Minute}},
		},
	}))
	require.NoError(t, rels.Add(&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}))
	require.NoError(t, invs.Add(&convoyv1alpha1.ReleaseInventory{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       convoyv1alpha1.ReleaseInventorySpec{Entries: make([]convoyv1alpha1.InventoryEntry, 3)},
	}))
	require.NoError(t, invs.Add(&convoyv1alpha1.ReleaseInventory{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec:       convoyv1alpha1.ReleaseInventorySpec{Entries: make([]convoyv1alpha1.InventoryEntry, 2)},
	}))
	drift, health := newPassQueue("drift", nil, nil), newPassQueue("health", nil, nil)
	t.Cleanup(drift.queue.ShutDown)
	t.Cleanup(health.queue.ShutDown)
	drift.due.set(cache.ObjectName{Namespace: "shop", Name: "web"}, time.Now().Add(time.Hour))
	// Namespace shop runs a pass of the drift loop, its share of one worker,
	// while another waits; web's pass parked.
	web, api := cache.ObjectName{Namespace: "shop", Name: "web"}, cache.ObjectName{Namespace: "shop", Name: "api"}
	drift.queue.Add(web)
	drift.queue.Add(api)
	_, _ = drift.queue.Get()
	drift.spots = newSpots(time.Millisecond, func(cache.ObjectName) {})
	never := make(chan singleflight.Result)
	t.Cleanup(func() { close(never) })
	_, err := park.Wait(park.WithSpot(context.Background(), drift.spots.take(web)), "resolve", func() <-chan singleflight.Result { return never })
	require.ErrorIs(t, err, park.ErrParked)
	c := &releaseCollector{}
	r := &running{releases: convoylisters.NewReleaseLister(rels), inventories: convoylisters.NewReleaseInventoryLister(invs), queues: []*passQueue{&drift, &health}}
	c.set(r)

	require.NoError(t, testutil.CustomCollectAndCompare(c, strings.NewReader(`
# HELP convoy_observer_namespaces_at_share [ALPHA] `+helpOf("convoy_observer_namespaces_at_share")+`
# TYPE convoy_observer_namespaces_at_share gauge
convoy_observer_namespaces_at_share{loop="drift"} 1
convoy_observer_namespaces_at_share{loop="health"} 0
# HELP convoy_observer_objects [ALPHA] `+objectsHelp()+`
# TYPE convoy_observer_objects gauge
convoy_observer_objects 5
# HELP convoy_observer_pass_lateness_seconds [ALPHA] `+latenessHelp()+`
# TYPE convoy_observer_pass_lateness_seconds gauge
convoy_observer_pass_lateness_seconds{loop="drift"} 0
convoy_observer_pass_lateness_seconds{loop="health"} 0
# HELP convoy_observer_passes_parked [ALPHA] `+helpOf("convoy_observer_passes_parked")+`
# TYPE convoy_observer_passes_parked gauge
convoy_observer_passes_parked{loop="drift"} 1
convoy_observer_passes_parked{loop="health"} 0
# HELP convoy_release_condition [ALPHA] 1 for each condition of each Release, with its type, status and reason as labels; reported by the replica that runs the loops.
# TYPE convoy_release_condition gauge
convoy_release_condition{name="web",namespace="shop",reason="Drifted",status="False",type="InSync"} 1
# HELP convoy_release_selfheal_backing_off [ALPHA] `+backingOffHelp()+`
# TYPE convoy_release_selfheal_backing_off gauge
convoy_release_selfheal_backing_off{name="web",namespace="shop"} 1
`), names...))

	stopped := &releaseCollector{}
	stopped.set(r)
	stopped.set(nil)
	require.NoError(t, testutil.CustomCollectAndCompare(stopped, strings.NewReader(""), names...), "stopped: nothing")
}

// The help texts, as declared.
func objectsHelp() string    { return helpOf("convoy_observer_objects") }
func latenessHelp() string   { return helpOf("convoy_observer_pass_lateness_seconds") }
func backingOffHelp() string { return helpOf("convoy_release_selfheal_backing_off") }

func helpOf(name string) string {
	for _, m := range metricSet.Metrics() {
		if m.Name == name {
			return m.Help
		}
	}
	return ""
}
