package contest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

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
