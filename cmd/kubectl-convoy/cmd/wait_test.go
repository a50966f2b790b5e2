package cmd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func TestReleaseWaitState(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: gen, Message: "m"}
	}
	release := func(rollout *convoyv1alpha1.RolloutStatus, conds ...metav1.Condition) *convoyv1alpha1.Release {
		r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		r.Status.Conditions, r.Status.Rollout = conds, rollout
		return r
	}
	inSync := cond(convoyv1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", 2)
	drifted := cond(convoyv1alpha1.ConditionInSync, metav1.ConditionFalse, "Drifted", 2)
	staleInSync := cond(convoyv1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", 1)
	healthy := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionTrue, "Healthy", 2)
	notConfigured := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionTrue, "NotConfigured", 2)
	progressing := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Progressing", 2)
	degraded := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Degraded", 2)
	staleDegraded := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Degraded", 1)
	complete := &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutComplete}
	holding := &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutHolding}

	cases := []struct {
		name     string
		release  *convoyv1alpha1.Release
		what     string
		reached  bool
		degraded bool
		why      string
	}{
		{"nothing reported", release(nil), forInSync, false, false, "InSync is not reported yet"},
		{"in sync", release(nil, inSync), forInSync, true, false, ""},
		{"drifted", release(nil, drifted), forInSync, false, false, "InSync is False (Drifted): m"},
		{"in sync for an older spec", release(nil, staleInSync), forInSync, false, false, "InSync is for generation 1, the Release is at 2"},
		{"degraded does not end insync", release(nil, drifted, degraded), forInSync, false, false, "InSync is False (Drifted): m"},
		{"healthy", release(nil, healthy), forHealthy, true, false, ""},
		{"not configured counts as healthy", release(nil, notConfigured), forHealthy, true, false, ""},
		{"progressing", release(nil, progressing), forHealthy, false, false, "Healthy is False (Progressing): m"},
		{"degraded ends healthy", release(nil, degraded), forHealthy, false, true, "m"},
		{"degraded for an older spec waits", release(nil, staleDegraded), forHealthy, false, false, "Healthy is for generation 1, the Release is at 2"},
		{"synced", release(complete, inSync, healthy), forSynced, true, false, ""},
		{"synced without a rollout", release(nil, inSync, healthy), forSynced, true, false, ""},
		{"synced waits for the rollout", release(holding, inSync, healthy), forSynced, false, false, "the rollout is Holding"},
		{"synced waits for InSync", release(complete, drifted, healthy), forSynced, false, false, "InSync is False (Drifted): m"},
		{"synced ends on Degraded", release(complete, inSync, degraded), forSynced, false, true, "m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := releaseWaitState(tc.release, tc.what)
			assert.Equal(t, tc.reached, s.reached)
			assert.Equal(t, tc.degraded, s.degraded)
			assert.Equal(t, tc.why, s.why)
		})
	}
}

// A read refused past the deadline is the timeout, whether or not the
// context is done yet.
func TestPastDeadline(t *testing.T) {
	future, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancelPast()
	for name, tc := range map[string]struct {
		ctx  context.Context
		want bool
	}{
		"no deadline": {context.Background(), false},
		"before it":   {future, false},
		"past it":     {past, true},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, pastDeadline(tc.ctx))
		})
	}
}
