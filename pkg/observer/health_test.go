package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/tools/cache"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
)

func entry(kind, name string, wave int32, hook bool) convoyv1alpha1.InventoryEntry {
	e := convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Kind: kind, Namespace: "shop", Name: name}, Version: "v1", Wave: wave, RenderRef: "bbbbbbbbbbbbbbbb"}
	if hook {
		e.Hook = &convoyv1alpha1.Hook{Phase: convoyv1alpha1.HookPostSync}
	}
	return e
}

func state(e convoyv1alpha1.InventoryEntry, s convoyv1alpha1.HealthState, ref string, hook convoyv1alpha1.HookStatus) convoyv1alpha1.InventoryEntryStatus {
	return convoyv1alpha1.InventoryEntryStatus{ObjectKey: e.ObjectKey, State: s, AssessedRenderRef: ref, HookPhase: hook}
}

// The observer asks for a sync exactly in the three cases of "How health
// wakes the controller", and in no other.
func TestSyncReasons(t *testing.T) {
	const oldRef, newRef = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
	db, web, job := entry("StatefulSet", "db", 0, false), entry("Deployment", "web", 1, false), entry("Job", "migrate", 1, true)
	inv := &convoyv1alpha1.ReleaseInventory{Spec: convoyv1alpha1.ReleaseInventorySpec{Entries: []convoyv1alpha1.InventoryEntry{db, web, job}}}
	const (
		H = convoyv1alpha1.HealthHealthy
		P = convoyv1alpha1.HealthProgressing
	)
	cases := []struct {
		name string
		prev []convoyv1alpha1.InventoryEntryStatus
		next []convoyv1alpha1.InventoryEntryStatus
		want []string
	}{
		{name: "nothing changes",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, newRef, ""), state(job, H, newRef, "Running")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, newRef, ""), state(job, H, newRef, "Running")}},
		{name: "a lower wave turns healthy: not the highest",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(db, P, newRef, ""), state(web, P, newRef, "")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, newRef, "")}},
		{name: "the highest wave turns healthy",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, newRef, "")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, H, newRef, "")},
			want: []string{"wave 1 is healthy"}},
		{name: "a new render assessed for the first time",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(db, H, oldRef, ""), state(web, P, oldRef, "")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, oldRef, "")},
			want: []string{"render " + newRef + " assessed for the first time"}},
		{name: "the new render on a second entry: not the first time",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, oldRef, "")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(db, H, newRef, ""), state(web, P, newRef, "")}},
		{name: "a hook completes",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(web, P, newRef, ""), state(job, H, newRef, "Running")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(web, P, newRef, ""), state(job, H, newRef, "Failed")},
			want: []string{"hook Job shop/migrate failed"}},
		{name: "a completed hook stays completed",
			prev: []convoyv1alpha1.InventoryEntryStatus{state(job, H, newRef, "Succeeded")},
			next: []convoyv1alpha1.InventoryEntryStatus{state(job, H, newRef, "Succeeded")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := map[inventory.Key]convoyv1alpha1.InventoryEntryStatus{}
			for _, p := range tc.prev {
				prev[p.ObjectKey] = p
			}
			assert.Equal(t, tc.want, syncReasons(inv, prev, tc.next))
		})
	}
}

func TestNextDelay(t *testing.T) {
	l := &HealthLoop{delays: map[cache.ObjectName]time.Duration{}}
	k := cache.ObjectName{Namespace: "shop", Name: "web"}
	var got []time.Duration
	for range 7 {
		got = append(got, l.nextDelay(k, false, 5*time.Minute))
	}
	assert.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 32 * time.Second, 32 * time.Second}, got)
	assert.Equal(t, 10*time.Second, l.nextDelay(k, false, 10*time.Second), "never past the interval")
	assert.Equal(t, 5*time.Minute, l.nextDelay(k, true, 5*time.Minute), "all healthy: at the interval")
	assert.Equal(t, 2*time.Second, l.nextDelay(k, false, 5*time.Minute), "starts again at 2s")
}
