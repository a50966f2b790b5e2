package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

const (
	renderA = "aaaaaaaaaaaaaaaa"
	renderB = "bbbbbbbbbbbbbbbb"
)

// t0 is the fake clock's origin.
var t0 = time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// mt is the time d after t0 as metav1.Time reads it back: in the local
// time zone.
func mt(d time.Duration) *metav1.Time { t := metav1.NewTime(at(d).Local()); return &t }

func dur(d time.Duration) *time.Duration { return &d }

var webKey = convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}

func entry(renderRef string) convoyv1alpha1.InventoryEntry {
	return convoyv1alpha1.InventoryEntry{ObjectKey: webKey, Version: "v1", RenderRef: renderRef}
}

func status(state convoyv1alpha1.HealthState, message string, firstUnhealthy, lastTransition *metav1.Time, assessed string) *convoyv1alpha1.InventoryEntryStatus {
	return &convoyv1alpha1.InventoryEntryStatus{
		ObjectKey: webKey, State: state, Message: message,
		FirstUnhealthy: firstUnhealthy, LastTransitionTime: lastTransition, AssessedRenderRef: assessed,
	}
}

var (
	pass     = Verdict{Result: ResultPass}
	noRule   = Verdict{Result: ResultPass, Message: MessageNoRule}
	fail     = Verdict{Result: ResultFail, Message: "1 of 3 replicas available"}
	paused   = Verdict{Result: ResultSuspended, Message: "the rollout is paused (spec.paused)"}
	evalErr  = Verdict{Result: ResultError, Message: "rule 0 of GlobalHealthRuleSet x cannot be evaluated: no such key: status"}
	notFound = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web")
)

func TestAssess(t *testing.T) {
	const (
		healthy     = convoyv1alpha1.HealthHealthy
		progressing = convoyv1alpha1.HealthProgressing
		degraded    = convoyv1alpha1.HealthDegraded
		unknown     = convoyv1alpha1.HealthUnknown
		suspended   = convoyv1alpha1.HealthSuspended
	)
	minute := dur(time.Minute)
	tests := []struct {
		name     string
		prev     *convoyv1alpha1.InventoryEntryStatus
		entry    convoyv1alpha1.InventoryEntry
		verdict  Verdict
		readErr  error
		deadline *time.Duration
		now      time.Time
		want     *convoyv1alpha1.InventoryEntryStatus
	}{
		// The state of a resource.
		{name: "no rule applies: Healthy", entry: entry(renderA), verdict: noRule, deadline: minute, now: at(0),
			want: status(healthy, MessageNoRule, nil, mt(0), renderA)},
		{name: "all rules return true: Healthy", entry: entry(renderA), verdict: pass, deadline: minute, now: at(0),
			want: status(healthy, "", nil, mt(0), renderA)},
		{name: "a rule returns false: Progressing with its message, firstUnhealthy set", entry: entry(renderA), verdict: fail, deadline: minute, now: at(0),
			want: status(progressing, "1 of 3 replicas available", mt(0), mt(0), renderA)},
		{name: "a rule cannot be evaluated: Unknown", entry: entry(renderA), verdict: evalErr, deadline: minute, now: at(0),
			want: status(unknown, evalErr.Message, nil, mt(0), renderA)},
		{name: "the resource is not on the cluster: Unknown", entry: entry(renderA), verdict: pass, readErr: notFound, now: at(0),
			want: status(unknown, "cannot read the object: it is not on the cluster", nil, mt(0), renderA)},
		{name: "missing, told by ErrNotFound", entry: entry(renderA), readErr: fmt.Errorf("reading shop/web: %w", ErrNotFound), now: at(0),
			want: status(unknown, "cannot read the object: it is not on the cluster", nil, mt(0), renderA)},
		{name: "the resource cannot be read: Unknown", entry: entry(renderA), readErr: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused"), now: at(0),
			want: status(unknown, "cannot read the object: dial tcp 10.0.0.1:6443: connect: connection refused", nil, mt(0), renderA)},
		{name: "the cluster does not serve the kind: Unknown", entry: entry(renderA),
			readErr: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "shop.example", Kind: "Widget"}, SearchedVersions: []string{"v1"}}, now: at(0),
			want: status(unknown, `cannot read the object: the cluster does not serve its kind: no matches for kind "Widget" in version "shop.example/v1"`, nil, mt(0), renderA)},
		{name: "a read error wins over the verdict", entry: entry(renderA), verdict: pass, readErr: notFound,
			prev: status(progressing, "x", mt(0), mt(0), renderA), deadline: minute, now: at(30 * time.Second),
			want: status(unknown, "cannot read the object: it is not on the cluster", mt(0), mt(30*time.Second), renderA)},

		// Suspended: no deadline runs.
		{name: "a Suspended rule returns false: Suspended, no firstUnhealthy", entry: entry(renderA), verdict: paused, deadline: minute, now: at(0),
			want: status(suspended, "the rollout is paused (spec.paused)", nil, mt(0), renderA)},
		{name: "Suspended past the deadline: still Suspended", entry: entry(renderA), verdict: paused, deadline: minute,
			prev: status(suspended, "the rollout is paused (spec.paused)", nil, mt(0), renderA), now: at(time.Hour),
			want: status(suspended, "the rollout is paused (spec.paused)", nil, mt(0), renderA)},
		{name: "paused while Degraded: Suspended, firstUnhealthy cleared", entry: entry(renderA), verdict: paused, deadline: minute,
			prev: status(degraded, "1 of 3 replicas available", mt(0), mt(time.Minute), renderA), now: at(2 * time.Minute),
			want: status(suspended, "the rollout is paused (spec.paused)", nil, mt(2*time.Minute), renderA)},
		{name: "resumed and failing: the deadline starts now", entry: entry(renderA), verdict: fail, deadline: minute,
			prev: status(suspended, "the rollout is paused (spec.paused)", nil, mt(0), renderA), now: at(time.Hour),
			want: status(progressing, "1 of 3 replicas available", mt(time.Hour), mt(time.Hour), renderA)},

		// Progressing and Degraded.
		{name: "failing before the deadline: Progressing, firstUnhealthy kept", entry: entry(renderA), verdict: fail, deadline: minute,
			prev: status(progressing, "0 of 3 replicas available", mt(0), mt(0), renderA), now: at(59 * time.Second),
			want: status(progressing, "1 of 3 replicas available", mt(0), mt(0), renderA)},
		{name: "failing when the deadline passes: Degraded", entry: entry(renderA), verdict: fail, deadline: minute,
			prev: status(progressing, "x", mt(0), mt(0), renderA), now: at(time.Minute),
			want: status(degraded, "1 of 3 replicas available", mt(0), mt(time.Minute), renderA)},
		{name: "failing after the deadline: Degraded stays, lastTransitionTime kept", entry: entry(renderA), verdict: fail, deadline: minute,
			prev: status(degraded, "x", mt(0), mt(time.Minute), renderA), now: at(time.Hour),
			want: status(degraded, "1 of 3 replicas available", mt(0), mt(time.Minute), renderA)},
		{name: "a longer deadline makes a Degraded resource Progressing again", entry: entry(renderA), verdict: fail, deadline: dur(2 * time.Hour),
			prev: status(degraded, "x", mt(0), mt(time.Minute), renderA), now: at(time.Hour),
			want: status(progressing, "1 of 3 replicas available", mt(0), mt(time.Hour), renderA)},
		{name: "without a deadline a failing resource stays Progressing", entry: entry(renderA), verdict: fail, deadline: nil,
			prev: status(progressing, "x", mt(0), mt(0), renderA), now: at(30 * 24 * time.Hour),
			want: status(progressing, "1 of 3 replicas available", mt(0), mt(0), renderA)},
		{name: "without a deadline the first failure is Progressing", entry: entry(renderA), verdict: fail, now: at(0),
			want: status(progressing, "1 of 3 replicas available", mt(0), mt(0), renderA)},
		{name: "passing again clears firstUnhealthy", entry: entry(renderA), verdict: pass, deadline: minute,
			prev: status(degraded, "x", mt(0), mt(time.Minute), renderA), now: at(time.Hour),
			want: status(healthy, "", nil, mt(time.Hour), renderA)},
		{name: "passing again from Progressing clears firstUnhealthy", entry: entry(renderA), verdict: noRule, deadline: minute,
			prev: status(progressing, "x", mt(0), mt(0), renderA), now: at(10 * time.Second),
			want: status(healthy, MessageNoRule, nil, mt(10*time.Second), renderA)},
		{name: "failing after passing starts the deadline again", entry: entry(renderA), verdict: fail, deadline: minute,
			prev: status(healthy, "", nil, mt(time.Hour), renderA), now: at(2 * time.Hour),
			want: status(progressing, "1 of 3 replicas available", mt(2*time.Hour), mt(2*time.Hour), renderA)},
		{name: "Unknown keeps firstUnhealthy", entry: entry(renderA), verdict: evalErr, deadline: minute,
			prev: status(progressing, "x", mt(0), mt(0), renderA), now: at(30 * time.Second),
			want: status(unknown, evalErr.Message, mt(0), mt(30*time.Second), renderA)},
		{name: "a read error keeps firstUnhealthy", entry: entry(renderA), readErr: errors.New("timeout"), deadline: minute,
			prev: status(degraded, "x", mt(0), mt(time.Minute), renderA), now: at(2 * time.Minute),
			want: status(unknown, "cannot read the object: timeout", mt(0), mt(2*time.Minute), renderA)},
		{name: "Unknown stays Unknown: lastTransitionTime kept", entry: entry(renderA), verdict: evalErr, deadline: minute,
			prev: status(unknown, "x", mt(0), mt(30*time.Second), renderA), now: at(40 * time.Second),
			want: status(unknown, evalErr.Message, mt(0), mt(30*time.Second), renderA)},
		{name: "failing after a short Unknown does not start the deadline again", entry: entry(renderA), verdict: fail, deadline: minute,
			prev: status(unknown, "x", mt(0), mt(50*time.Second), renderA), now: at(70 * time.Second),
			want: status(degraded, "1 of 3 replicas available", mt(0), mt(70*time.Second), renderA)},
		{name: "a new render does not clear firstUnhealthy: Degraded at once past the deadline", entry: entry(renderB), verdict: fail, deadline: minute,
			prev: status(progressing, "x", mt(0), mt(0), renderA), now: at(5 * time.Minute),
			want: status(degraded, "1 of 3 replicas available", mt(0), mt(5*time.Minute), renderB)},
		{name: "a new render before the deadline stays Progressing", entry: entry(renderB), verdict: fail, deadline: minute,
			prev: status(progressing, "x", mt(0), mt(0), renderA), now: at(30 * time.Second),
			want: status(progressing, "1 of 3 replicas available", mt(0), mt(0), renderB)},
		{name: "a new render that passes is Healthy", entry: entry(renderB), verdict: pass, deadline: minute,
			prev: status(degraded, "x", mt(0), mt(time.Minute), renderA), now: at(5 * time.Minute),
			want: status(healthy, "", nil, mt(5*time.Minute), renderB)},

		// lastTransitionTime and assessedRenderRef.
		{name: "Healthy stays Healthy: lastTransitionTime kept, assessedRenderRef follows renderRef", entry: entry(renderB), verdict: pass,
			prev: status(healthy, "", nil, mt(0), renderA), now: at(time.Hour),
			want: status(healthy, "", nil, mt(0), renderB)},
		{name: "a previous status without lastTransitionTime gets one", entry: entry(renderA), verdict: pass,
			prev: status(healthy, "", nil, nil, renderA), now: at(time.Hour),
			want: status(healthy, "", nil, mt(time.Hour), renderA)},
		{name: "times are kept to the second", entry: entry(renderA), verdict: fail, deadline: minute,
			now:  at(1500 * time.Millisecond).In(time.FixedZone("CEST", 2*3600)),
			want: status(progressing, "1 of 3 replicas available", mt(time.Second), mt(time.Second), renderA)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *convoyv1alpha1.InventoryEntryStatus
			if tc.prev != nil {
				before = tc.prev.DeepCopy()
			}
			got := Assess(tc.prev, tc.entry, tc.verdict, tc.readErr, tc.deadline, tc.now)
			assert.Equal(t, *tc.want, got)
			assert.Equal(t, before, tc.prev, "Assess must not change prev")
		})
	}
}

func TestAssessKeepsTheHookPhase(t *testing.T) {
	prev := status(convoyv1alpha1.HealthProgressing, "Job is running", mt(0), mt(0), renderA)
	prev.HookPhase = convoyv1alpha1.HookRunning
	got := Assess(prev, entry(renderA), pass, nil, nil, at(time.Minute))
	assert.Equal(t, convoyv1alpha1.HookRunning, got.HookPhase)
}

func TestAssessCutsLongMessages(t *testing.T) {
	long := strings.Repeat("é", 2000)
	got := Assess(nil, entry(renderA), Verdict{Result: ResultFail, Message: long}, nil, nil, at(0))
	assert.LessOrEqual(t, len(got.Message), 1024, "the CRD's limit, in bytes and so in characters")
	assert.Greater(t, len(got.Message), 1000)
	assert.True(t, utf8.ValidString(got.Message), "no character is split")
	assert.True(t, strings.HasSuffix(got.Message, " …[4000 bytes, truncated]"))
}

// roundTrip stores st as the API server would and reads it back.
func roundTrip(t *testing.T, st convoyv1alpha1.InventoryEntryStatus) *convoyv1alpha1.InventoryEntryStatus {
	t.Helper()
	data, err := json.Marshal(st)
	require.NoError(t, err)
	var out convoyv1alpha1.InventoryEntryStatus
	require.NoError(t, json.Unmarshal(data, &out))
	return &out
}

// TestAssessStory walks one Deployment through the page with a fake clock,
// storing every status as the ReleaseInventory would in between, a
// restart of the observer included.
func TestAssessStory(t *testing.T) {
	deadline := dur(time.Minute)
	var prev *convoyv1alpha1.InventoryEntryStatus
	step := func(now time.Duration, e convoyv1alpha1.InventoryEntry, v Verdict, readErr error) convoyv1alpha1.InventoryEntryStatus {
		st := Assess(prev, e, v, readErr, deadline, at(now))
		stored := roundTrip(t, st)
		assert.Equal(t, st, *stored, "Assess returns what the API server gives back")
		prev = stored
		return st
	}

	st := step(0, entry(renderA), fail, nil)
	assert.Equal(t, convoyv1alpha1.HealthProgressing, st.State)
	assert.Equal(t, mt(0), st.FirstUnhealthy)

	st = step(20*time.Second, entry(renderA), Verdict{}, errors.New("connection reset by peer"))
	assert.Equal(t, convoyv1alpha1.HealthUnknown, st.State)
	assert.Equal(t, mt(0), st.FirstUnhealthy)

	st = step(40*time.Second, entry(renderA), fail, nil)
	assert.Equal(t, convoyv1alpha1.HealthProgressing, st.State)
	assert.Equal(t, mt(40*time.Second), st.LastTransitionTime)

	// The observer restarts: prev comes back from the ReleaseInventory.
	st = step(61*time.Second, entry(renderA), fail, nil)
	assert.Equal(t, convoyv1alpha1.HealthDegraded, st.State)
	assert.Equal(t, mt(0), st.FirstUnhealthy)

	// A new render that still fails: Degraded at once.
	st = step(90*time.Second, entry(renderB), fail, nil)
	assert.Equal(t, convoyv1alpha1.HealthDegraded, st.State)
	assert.Equal(t, renderB, st.AssessedRenderRef)
	assert.Equal(t, mt(61*time.Second), st.LastTransitionTime)

	// Fixed.
	st = step(2*time.Minute, entry(renderB), pass, nil)
	assert.Equal(t, convoyv1alpha1.HealthHealthy, st.State)
	assert.Nil(t, st.FirstUnhealthy)

	// Failing again starts a new deadline.
	st = step(3*time.Minute, entry(renderB), fail, nil)
	assert.Equal(t, convoyv1alpha1.HealthProgressing, st.State)
	assert.Equal(t, mt(3*time.Minute), st.FirstUnhealthy)
}
