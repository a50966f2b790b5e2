package contest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// drifted is the Deployment web with spec.replicas owned by manager, and
// convoy's apply at applied.
func drifted(manager, subresource string, applied time.Time) []subresourcesv1alpha1.ObjectDiff {
	at := metav1.NewTime(applied)
	return []subresourcesv1alpha1.ObjectDiff{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web",
		Status: subresourcesv1alpha1.ObjectModified, AppliedAt: &at,
		Changes: []subresourcesv1alpha1.FieldChange{{Path: "spec.replicas",
			Owners: []subresourcesv1alpha1.FieldOwner{{Manager: manager, Subresource: subresource}}}}}}
}

func TestContest(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, MaxBackoff: time.Hour, Clock: clk})
	const uid = "u1"
	interval := time.Minute
	applied := start

	// First drift: no heal yet.
	assert.Empty(t, tr.Observe(uid, drifted("hpa", "scale", applied)))
	assert.True(t, tr.ShouldRequest(uid, interval, drifted("hpa", "scale", applied)))
	// The same drift seen again without a heal in between counts nothing.
	clk.SetTime(clk.Now().Add(time.Minute))
	assert.Empty(t, tr.Observe(uid, drifted("hpa", "scale", applied)))

	// Three heals, each taken back by the same manager.
	var got []Field
	for i := 0; i < 3; i++ {
		clk.SetTime(clk.Now().Add(time.Minute))
		applied = clk.Now().Add(-30 * time.Second)
		got = tr.Observe(uid, drifted("hpa", "scale", applied))
		if i < 2 {
			assert.Empty(t, got, "heal %d", i+1)
		}
	}
	require.Len(t, got, 1)
	assert.Equal(t, "spec.replicas", got[0].Path)
	assert.Equal(t, "hpa", got[0].Manager)
	assert.Equal(t, "scale", got[0].Subresource)
	assert.Equal(t, int32(3), got[0].Heals)
	assert.Equal(t, "hpa (scale)", got[0].Owner())
	assert.Equal(t, "Deployment", got[0].Object.Kind)
	assert.Len(t, tr.Contested(uid), 1)
	assert.Equal(t, 1, tr.Count())

	// Self-heal backs off: 2, 4, 8 ... intervals, up to the cap.
	assert.True(t, tr.ShouldRequest(uid, interval, drifted("hpa", "scale", applied)))
	requests := 0
	for m := 0; m < 120; m++ {
		clk.SetTime(clk.Now().Add(time.Minute))
		if tr.ShouldRequest(uid, interval, drifted("hpa", "scale", applied)) {
			requests++
		}
	}
	// Over 120 passes: at 2, 6, 14, 30, 62 and 122 minutes (capped at 60).
	assert.Equal(t, 5, requests, "instead of 120")
	// Another drift that is not contested heals at once.
	other := drifted("hpa", "scale", applied)
	other[0].Changes = append(other[0].Changes, subresourcesv1alpha1.FieldChange{Path: "spec.paused",
		Owners: []subresourcesv1alpha1.FieldOwner{{Manager: "someone"}}})
	assert.True(t, tr.ShouldRequest(uid, interval, other))

	// Another manager on the field starts over.
	assert.Empty(t, tr.Observe(uid, drifted("kubectl", "", applied)))
	assert.Empty(t, tr.Contested(uid))

	// A field that stays healed for a window is forgotten; so is a Release.
	clk.SetTime(clk.Now().Add(11 * time.Minute))
	tr.Observe(uid, nil)
	assert.Zero(t, tr.Count())
	tr.Observe(uid, drifted("hpa", "scale", applied))
	tr.Forget(uid)
	assert.Empty(t, tr.Contested(uid))
	assert.True(t, tr.ShouldRequest(uid, interval, drifted("hpa", "scale", applied)), "no contest: heal at once")
}

// Take-backs older than the window do not count.
func TestContestWindow(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, Clock: clk})
	applied := clk.Now()
	tr.Observe("u", drifted("hpa", "scale", applied))
	for i := 0; i < 5; i++ {
		clk.SetTime(clk.Now().Add(6 * time.Minute))
		applied = clk.Now()
		assert.Empty(t, tr.Observe("u", drifted("hpa", "scale", applied)), "take-back %d: one heal per 6 minutes is at most 2 in 10", i+1)
	}
}

// contestedTracker returns a Tracker on clk in which the Deployment web's
// spec.replicas of the Release uid is contested by hpa (scale), and the
// self-heal requests back off (one made, the next one interval*2 later).
func contestedTracker(t *testing.T, clk *clocktesting.FakePassiveClock, uid types.UID, interval time.Duration) *Tracker {
	t.Helper()
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, MaxBackoff: time.Hour, Clock: clk})
	tr.Observe(uid, drifted("hpa", "scale", clk.Now()))
	for range 3 {
		clk.SetTime(clk.Now().Add(time.Minute))
		tr.Observe(uid, drifted("hpa", "scale", clk.Now()))
	}
	require.Len(t, tr.Contested(uid), 1)
	require.True(t, tr.ShouldRequest(uid, interval, drifted("hpa", "scale", clk.Now())))
	return tr
}

// A new leader seeded from the status the old one wrote goes on as the
// old one would have: the field stays contested (no new Event), and the
// self-heal requests keep their backoff instead of starting over.
func TestSeedFromStatus(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	const uid = "u1"
	interval := time.Minute
	old := contestedTracker(t, clk, uid, interval)
	status := old.Status(uid)
	require.NotNil(t, status)
	require.Len(t, status.Contested, 1)
	assert.Equal(t, convoyv1alpha1.ContestedField{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web",
		Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: metav1.NewTime(clk.Now())}, status.Contested[0])
	assert.Equal(t, 2*interval, status.Backoff.Duration)
	assert.Equal(t, clk.Now().Add(2*interval), status.NextRequestAt.Time)

	clk.SetTime(clk.Now().Add(30 * time.Second))
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, MaxBackoff: time.Hour, Clock: clk})
	tr.Seed(uid, status.DeepCopy())
	assert.Equal(t, status, tr.Status(uid), "the same memory: nothing to write")
	// The next pass sees convoy's apply time for the first time: no take-back.
	assert.Empty(t, tr.Observe(uid, drifted("hpa", "scale", clk.Now())), "no field becomes contested again: no second Event")
	assert.Equal(t, status, tr.Status(uid))
	assert.False(t, tr.ShouldRequest(uid, interval, drifted("hpa", "scale", clk.Now())), "the backoff goes on")
	clk.SetTime(clk.Now().Add(90 * time.Second))
	assert.True(t, tr.ShouldRequest(uid, interval, drifted("hpa", "scale", clk.Now())), "at nextRequestAt")
	assert.Equal(t, 4*interval, tr.Status(uid).Backoff.Duration, "and doubles from where it was")

	// A memory is seeded once: a status read later (an informer behind the
	// leader's own writes) does not bring back what the memory dropped.
	tr.Seed(uid, nil)
	assert.NotNil(t, tr.Status(uid))
	fresh := New(Options{Clock: clk})
	fresh.Seed(uid, nil)
	fresh.Seed(uid, status)
	assert.Nil(t, fresh.Status(uid), "seeded empty first")

	// Forgotten (the Release deleted), it is seeded again.
	tr.Forget(uid)
	tr.Seed(uid, status)
	assert.Len(t, tr.Contested(uid), 1)
}

// A seeded field whose contest ends is dropped a window after the last pass
// that found it drifted, with the backoff.
func TestSeededContestEnds(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	status := contestedTracker(t, clk, "u", time.Minute).Status("u")
	tr := New(Options{Window: 10 * time.Minute, Clock: clk})
	tr.Seed("u", status)
	clk.SetTime(clk.Now().Add(9 * time.Minute))
	tr.Observe("u", nil)
	assert.NotNil(t, tr.Status("u"), "within the window")
	clk.SetTime(clk.Now().Add(time.Minute))
	tr.Observe("u", nil)
	assert.Nil(t, tr.Status("u"), "healed for a window: no contest, no backoff")
	assert.True(t, tr.ShouldRequest("u", time.Minute, drifted("hpa", "scale", clk.Now())))
}

// status.selfHeal is bounded: at most MaxContestedFields fields, the ones
// contested longest first, and strings within the CRD's bounds.
func TestStatusBounds(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	long := "spec." + strings.Repeat("x", 600)
	var contested []convoyv1alpha1.ContestedField
	for i := range 40 {
		contested = append(contested, convoyv1alpha1.ContestedField{Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%02d", i),
			Path: "data.k", Manager: "m", Heals: 3, Since: metav1.NewTime(start.Add(-time.Duration(i) * time.Minute))})
	}
	contested[0].Path, contested[0].Manager = long, strings.Repeat("m", 300)
	tr := New(Options{Clock: clk})
	// Seeding reads at most MaxContestedFields: what the CRD admits.
	tr.Seed("u", &convoyv1alpha1.SelfHealStatus{Contested: contested, Backoff: &metav1.Duration{Duration: time.Minute}})
	assert.Len(t, tr.Contested("u"), convoyv1alpha1.MaxContestedFields)

	status := tr.Status("u")
	require.Len(t, status.Contested, convoyv1alpha1.MaxContestedFields)
	assert.Equal(t, "cm-31", status.Contested[0].Name, "contested longest first")
	assert.Equal(t, "cm-00", status.Contested[31].Name)
	assert.LessOrEqual(t, len(status.Contested[31].Path), convoyv1alpha1.MaxContestedPath)
	assert.Contains(t, status.Contested[31].Path, "truncated]")
	assert.LessOrEqual(t, len(status.Contested[31].Manager), convoyv1alpha1.MaxFieldManager)
	assert.Equal(t, status, tr.Status("u"), "the same memory, the same status")
}
