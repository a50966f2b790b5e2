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

// passes builds the passes of the Release uid, whose status.selfHeal is
// status, in automatic mode with an interval of a minute.
type passes struct {
	uid    types.UID
	status *convoyv1alpha1.SelfHealStatus
}

const interval = time.Minute

func (p passes) release() *convoyv1alpha1.Release {
	r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{UID: p.uid}}
	r.Status.SelfHeal = p.status
	return r
}

// drifted is a pass that found objects drifted, and would request a
// self-heal.
func (p passes) drifted(objects []subresourcesv1alpha1.ObjectDiff) Pass {
	return Pass{Release: p.release(), Verdict: subresourcesv1alpha1.DiffDrifted, Objects: objects, Heal: true, Interval: interval}
}

// inSync is a pass that found no drift.
func (p passes) inSync() Pass {
	return Pass{Release: p.release(), Verdict: subresourcesv1alpha1.DiffInSync, Interval: interval}
}

// undetermined is a pass whose check failed: it says nothing of the
// fields.
func (p passes) undetermined() Pass {
	return Pass{Release: p.release(), Verdict: subresourcesv1alpha1.DiffUndetermined, Interval: interval}
}

func TestContest(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, MaxBackoff: time.Hour, Clock: clk})
	p := passes{uid: "u1"}
	applied := start

	// First drift: no heal yet.
	d := tr.Decide(p.drifted(drifted("hpa", "scale", applied)))
	assert.True(t, d.Observed)
	assert.Empty(t, d.NewlyContested)
	assert.True(t, d.Request)
	assert.Nil(t, d.Status, "nothing contested")
	// The same drift seen again without a heal in between counts nothing.
	clk.SetTime(clk.Now().Add(time.Minute))
	assert.Empty(t, tr.Decide(p.drifted(drifted("hpa", "scale", applied))).NewlyContested)

	// Three heals, each taken back by the same manager.
	for i := 0; i < 3; i++ {
		clk.SetTime(clk.Now().Add(time.Minute))
		applied = clk.Now().Add(-30 * time.Second)
		d = tr.Decide(p.drifted(drifted("hpa", "scale", applied)))
		if i < 2 {
			assert.Empty(t, d.NewlyContested, "heal %d", i+1)
		}
	}
	got := d.NewlyContested
	require.Len(t, got, 1)
	assert.Equal(t, "spec.replicas", got[0].Path)
	assert.Equal(t, "hpa", got[0].Manager)
	assert.Equal(t, "scale", got[0].Subresource)
	assert.Equal(t, int32(3), got[0].Heals)
	assert.Equal(t, "hpa (scale)", got[0].Owner())
	assert.Equal(t, "Deployment", got[0].Object.Kind)
	assert.Len(t, d.Contested, 1)
	assert.Equal(t, 1, d.Total)
	assert.True(t, d.Request, "the first request of the backoff")
	require.NotNil(t, d.Status)
	assert.Equal(t, 2*interval, d.Status.Backoff.Duration)

	// Self-heal backs off: 2, 4, 8 ... intervals, up to the cap.
	requests := 0
	for m := 0; m < 120; m++ {
		clk.SetTime(clk.Now().Add(time.Minute))
		if tr.Decide(p.drifted(drifted("hpa", "scale", applied))).Request {
			requests++
		}
	}
	// Over 120 passes: at 2, 6, 14, 30, 62 and 122 minutes (capped at 60).
	assert.Equal(t, 5, requests, "instead of 120")
	// Another drift that is not contested heals at once.
	other := drifted("hpa", "scale", applied)
	other[0].Changes = append(other[0].Changes, subresourcesv1alpha1.FieldChange{Path: "spec.paused",
		Owners: []subresourcesv1alpha1.FieldOwner{{Manager: "someone"}}})
	assert.True(t, tr.Decide(p.drifted(other)).Request)
	// A pass that would not request a self-heal (manual mode) requests none.
	manual := p.drifted(other)
	manual.Heal = false
	assert.False(t, tr.Decide(manual).Request)

	// Another manager on the field starts over.
	d = tr.Decide(p.drifted(drifted("kubectl", "", applied)))
	assert.Empty(t, d.NewlyContested)
	assert.Empty(t, d.Contested)

	// A field that stays healed for a window is forgotten; so is a Release.
	clk.SetTime(clk.Now().Add(11 * time.Minute))
	assert.Zero(t, tr.Decide(p.inSync()).Total)
	tr.Decide(p.drifted(drifted("hpa", "scale", applied)))
	tr.Forget(p.uid)
	d = tr.Decide(p.drifted(drifted("hpa", "scale", applied)))
	assert.Empty(t, d.Contested)
	assert.True(t, d.Request, "no contest: heal at once")
}

// Take-backs older than the window do not count.
func TestContestWindow(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, Clock: clk})
	p := passes{uid: "u"}
	applied := clk.Now()
	tr.Decide(p.drifted(drifted("hpa", "scale", applied)))
	for i := 0; i < 5; i++ {
		clk.SetTime(clk.Now().Add(6 * time.Minute))
		applied = clk.Now()
		assert.Empty(t, tr.Decide(p.drifted(drifted("hpa", "scale", applied))).NewlyContested, "take-back %d: one heal per 6 minutes is at most 2 in 10", i+1)
	}
}

// An Undetermined pass says nothing of the fields: it neither counts a
// take-back nor lets a contest end, and requests nothing.
func TestUndeterminedPassKeepsTheContests(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	p := passes{uid: "u"}
	tr := contestedTracker(t, clk, p.uid)
	clk.SetTime(clk.Now().Add(11 * time.Minute))
	d := tr.Decide(p.undetermined())
	assert.False(t, d.Observed)
	assert.Empty(t, d.NewlyContested)
	assert.Len(t, d.Contested, 1, "not healed for a window: not seen at all")
	assert.False(t, d.Request)
	assert.NotNil(t, d.Status)
	d = tr.Decide(p.inSync())
	assert.True(t, d.Observed)
	assert.Zero(t, d.Total, "a pass without drift ends it")
	assert.Nil(t, d.Status)
}

// contestedTracker returns a Tracker on clk in which the Deployment web's
// spec.replicas of the Release uid is contested by hpa (scale), and the
// self-heal requests back off (one made, the next one interval*2 later).
func contestedTracker(t *testing.T, clk *clocktesting.FakePassiveClock, uid types.UID) *Tracker {
	t.Helper()
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, MaxBackoff: time.Hour, Clock: clk})
	p := passes{uid: uid}
	tr.Decide(p.drifted(drifted("hpa", "scale", clk.Now())))
	var d Decision
	for range 3 {
		clk.SetTime(clk.Now().Add(time.Minute))
		d = tr.Decide(p.drifted(drifted("hpa", "scale", clk.Now())))
	}
	require.Len(t, d.Contested, 1)
	require.True(t, d.Request)
	return tr
}

// statusOf is the status.selfHeal tr holds of the Release uid, read by a
// pass that says nothing of the fields.
func statusOf(tr *Tracker, uid types.UID) *convoyv1alpha1.SelfHealStatus {
	return tr.Decide(passes{uid: uid}.undetermined()).Status
}

// A new leader seeded from the status the old one wrote goes on as the
// old one would have: the field stays contested (no new Event), and the
// self-heal requests keep their backoff instead of starting over.
func TestSeedFromStatus(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	const uid = "u1"
	old := contestedTracker(t, clk, uid)
	status := statusOf(old, uid)
	require.NotNil(t, status)
	require.Len(t, status.Contested, 1)
	assert.Equal(t, convoyv1alpha1.ContestedField{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web",
		Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: metav1.NewTime(clk.Now())}, status.Contested[0])
	assert.Equal(t, 2*interval, status.Backoff.Duration)
	assert.Equal(t, clk.Now().Add(2*interval), status.NextRequestAt.Time)

	clk.SetTime(clk.Now().Add(30 * time.Second))
	tr := New(Options{Heals: 3, Window: 10 * time.Minute, MaxBackoff: time.Hour, Clock: clk})
	seeded := passes{uid: uid, status: status.DeepCopy()}
	assert.Equal(t, status, tr.Decide(seeded.undetermined()).Status, "the same memory: nothing to write")
	// The next pass sees convoy's apply time for the first time: no take-back.
	d := tr.Decide(seeded.drifted(drifted("hpa", "scale", clk.Now())))
	assert.Empty(t, d.NewlyContested, "no field becomes contested again: no second Event")
	assert.Equal(t, status, d.Status)
	assert.False(t, d.Request, "the backoff goes on")
	clk.SetTime(clk.Now().Add(90 * time.Second))
	d = tr.Decide(seeded.drifted(drifted("hpa", "scale", clk.Now())))
	assert.True(t, d.Request, "at nextRequestAt")
	assert.Equal(t, 4*interval, d.Status.Backoff.Duration, "and doubles from where it was")

	// A memory is seeded once: a status read later (an informer behind the
	// leader's own writes) does not bring back what the memory dropped.
	assert.NotNil(t, tr.Decide(passes{uid: uid}.undetermined()).Status)
	fresh := New(Options{Clock: clk})
	fresh.Decide(passes{uid: uid}.undetermined())
	assert.Nil(t, fresh.Decide(seeded.undetermined()).Status, "seeded empty first")

	// Forgotten (the Release deleted), it is seeded again.
	tr.Forget(uid)
	assert.Len(t, tr.Decide(seeded.undetermined()).Contested, 1)
}

// A seeded field whose contest ends is dropped a window after the last pass
// that found it drifted, with the backoff.
func TestSeededContestEnds(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	seeded := passes{uid: "u", status: statusOf(contestedTracker(t, clk, "u"), "u")}
	tr := New(Options{Window: 10 * time.Minute, Clock: clk})
	tr.Decide(seeded.undetermined())
	clk.SetTime(clk.Now().Add(9 * time.Minute))
	assert.NotNil(t, tr.Decide(seeded.inSync()).Status, "within the window")
	clk.SetTime(clk.Now().Add(time.Minute))
	assert.Nil(t, tr.Decide(seeded.inSync()).Status, "healed for a window: no contest, no backoff")
	assert.True(t, tr.Decide(seeded.drifted(drifted("hpa", "scale", clk.Now()))).Request)
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
	seeded := passes{uid: "u", status: &convoyv1alpha1.SelfHealStatus{Contested: contested, Backoff: &metav1.Duration{Duration: time.Minute}}}
	d := tr.Decide(seeded.undetermined())
	assert.Len(t, d.Contested, convoyv1alpha1.MaxContestedFields)

	status := d.Status
	require.Len(t, status.Contested, convoyv1alpha1.MaxContestedFields)
	assert.Equal(t, "cm-31", status.Contested[0].Name, "contested longest first")
	assert.Equal(t, "cm-00", status.Contested[31].Name)
	assert.LessOrEqual(t, len(status.Contested[31].Path), convoyv1alpha1.MaxContestedPath)
	assert.Contains(t, status.Contested[31].Path, "truncated]")
	assert.LessOrEqual(t, len(status.Contested[31].Manager), convoyv1alpha1.MaxFieldManager)
	assert.Equal(t, status, tr.Decide(seeded.undetermined()).Status, "the same memory, the same status")
}

// A check's objects carry their contested fields from the Release's
// status.selfHeal, without touching the compare's objects (the cache's).
func TestMark(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	objects := []subresourcesv1alpha1.ObjectDiff{
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectModified},
		{Kind: "ConfigMap", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectInSync},
	}
	status := &convoyv1alpha1.SelfHealStatus{Contested: []convoyv1alpha1.ContestedField{
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: since},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Path: "spec.paused", Manager: "kubectl", Heals: 4, Since: since},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "gone", Path: "spec.replicas", Manager: "hpa", Heals: 3, Since: since},
	}}

	got := Mark(objects, status)
	assert.Equal(t, []subresourcesv1alpha1.ContestedField{
		{Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: since},
		{Path: "spec.paused", Manager: "kubectl", Heals: 4, Since: since},
	}, got[0].Contested)
	assert.Empty(t, got[1].Contested, "the ConfigMap of the same name is another object")
	assert.Len(t, got, 2, "an object the render no longer has is not listed")
	assert.Empty(t, objects[0].Contested, "the compare's objects are left as they were")

	assert.Equal(t, objects, Mark(objects, nil))
}
