package health

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func st(group, kind, namespace, name string, state convoyv1alpha1.HealthState, message string) convoyv1alpha1.InventoryEntryStatus {
	return convoyv1alpha1.InventoryEntryStatus{
		ObjectKey: convoyv1alpha1.ObjectKey{Group: group, Kind: kind, Namespace: namespace, Name: name},
		State:     state, Message: message,
	}
}

func states(ss ...convoyv1alpha1.HealthState) []convoyv1alpha1.InventoryEntryStatus {
	out := make([]convoyv1alpha1.InventoryEntryStatus, len(ss))
	for i, s := range ss {
		out[i] = st("", "ConfigMap", "shop", "c", s, "")
	}
	return out
}

const (
	hH = convoyv1alpha1.HealthHealthy
	hP = convoyv1alpha1.HealthProgressing
	hD = convoyv1alpha1.HealthDegraded
	hU = convoyv1alpha1.HealthUnknown
	hS = convoyv1alpha1.HealthSuspended
)

func TestSummarize(t *testing.T) {
	assert.Equal(t, convoyv1alpha1.HealthSummary{}, Summarize(nil))
	assert.Equal(t, convoyv1alpha1.HealthSummary{Total: 3, Healthy: 2, Progressing: 1}, Summarize(states(hH, hP, hH)))
	assert.Equal(t, convoyv1alpha1.HealthSummary{Total: 3, Healthy: 1, Suspended: 2}, Summarize(states(hS, hH, hS)))
	assert.Equal(t, convoyv1alpha1.HealthSummary{Total: 6, Healthy: 1, Progressing: 1, Degraded: 2, Unknown: 2},
		Summarize(states(hD, hH, hU, hP, hD, "")), "an entry never assessed counts as unknown")
}

func TestWorst(t *testing.T) {
	tests := []struct {
		in   []convoyv1alpha1.HealthState
		want convoyv1alpha1.HealthState
	}{
		{nil, hH},
		{[]convoyv1alpha1.HealthState{hH, hH}, hH},
		{[]convoyv1alpha1.HealthState{hH, hP}, hP},
		{[]convoyv1alpha1.HealthState{hP, hU, hH}, hU},
		{[]convoyv1alpha1.HealthState{hU, hP}, hU},
		{[]convoyv1alpha1.HealthState{hD, hU, hP}, hD},
		{[]convoyv1alpha1.HealthState{hP, hD}, hD},
		{[]convoyv1alpha1.HealthState{hH, ""}, hU},
		{[]convoyv1alpha1.HealthState{hH, hS}, hS},
		{[]convoyv1alpha1.HealthState{hS, hP, hH}, hP},
		{[]convoyv1alpha1.HealthState{hS, hU}, hU},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Worst(states(tc.in...)), "%v", tc.in)
	}
}

func TestConditionFor(t *testing.T) {
	for state, want := range map[convoyv1alpha1.HealthState][2]string{
		hH: {"True", ReasonHealthy},
		hP: {"False", ReasonProgressing},
		hU: {"Unknown", ReasonUnknown},
		hD: {"False", ReasonDegraded},
		hS: {"False", ReasonSuspended},
		"": {"Unknown", ReasonUnknown},
	} {
		status, reason := ConditionFor(state)
		assert.Equal(t, want, [2]string{string(status), reason}, "%q", state)
	}
}

func TestHealthyCondition(t *testing.T) {
	web := st("apps", "Deployment", "shop", "web", hP, "1 of 3 replicas available")
	tests := []struct {
		name   string
		states []convoyv1alpha1.InventoryEntryStatus
		want   metav1.Condition
	}{
		{name: "no resources", states: nil,
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonHealthy, Message: "no resources to assess"}},
		{name: "all healthy", states: []convoyv1alpha1.InventoryEntryStatus{
			st("", "Service", "shop", "web", hH, ""), st("apps", "Deployment", "shop", "web", hH, ""),
		}, want: metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonHealthy, Message: "2 of 2 resources healthy"}},
		{name: "progressing", states: []convoyv1alpha1.InventoryEntryStatus{
			st("", "Service", "shop", "web", hH, ""), web, st("", "ConfigMap", "shop", "settings", hH, MessageNoRule),
		}, want: metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonProgressing,
			Message: "2 of 3 resources healthy; Deployment.apps shop/web is Progressing: 1 of 3 replicas available"}},
		{name: "unknown is worse than progressing", states: []convoyv1alpha1.InventoryEntryStatus{
			web, st("", "Pod", "shop", "migrate", hU, "cannot read the object: it is not on the cluster"),
		}, want: metav1.Condition{Status: metav1.ConditionUnknown, Reason: ReasonUnknown,
			Message: "0 of 2 resources healthy; Pod shop/migrate is Unknown: cannot read the object: it is not on the cluster"}},
		{name: "degraded is the worst, the others are counted", states: []convoyv1alpha1.InventoryEntryStatus{
			st("", "Pod", "shop", "migrate", hU, "x"),
			st("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.shop.example", hD, "CRD is not established yet"),
			st("apps", "StatefulSet", "shop", "db", hD, "1 of 3 replicas ready"),
			st("apps", "DaemonSet", "shop", "agent", hD, ""),
			web,
		}, want: metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonDegraded,
			Message: "0 of 5 resources healthy; CustomResourceDefinition.apiextensions.k8s.io widgets.shop.example is Degraded: CRD is not established yet (and 2 more Degraded)"}},
		{name: "suspended", states: []convoyv1alpha1.InventoryEntryStatus{
			st("", "Service", "shop", "web", hH, ""), st("apps", "Deployment", "shop", "web", hS, "the rollout is paused (spec.paused)"),
		}, want: metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonSuspended,
			Message: "1 of 2 resources healthy; Deployment.apps shop/web is Suspended: the rollout is paused (spec.paused)"}},
		{name: "progressing is worse than suspended", states: []convoyv1alpha1.InventoryEntryStatus{
			st("apps", "Deployment", "shop", "api", hS, "paused"), web,
		}, want: metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonProgressing,
			Message: "0 of 2 resources healthy; Deployment.apps shop/web is Progressing: 1 of 3 replicas available"}},
		{name: "no message", states: []convoyv1alpha1.InventoryEntryStatus{st("", "Service", "shop", "lb", hP, "")},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonProgressing, Message: "0 of 1 resources healthy; Service shop/lb is Progressing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Type = convoyv1alpha1.ConditionHealthy
			assert.Equal(t, tc.want, HealthyCondition(tc.states))
		})
	}
}

func TestOtherConditions(t *testing.T) {
	assert.Equal(t, metav1.Condition{Type: "Healthy", Status: metav1.ConditionTrue, Reason: "NotConfigured",
		Message: "spec.healthAssessment is not set: every resource counts as healthy"}, NotConfiguredCondition())
	assert.Equal(t, metav1.Condition{Type: "Healthy", Status: metav1.ConditionUnknown, Reason: "Pending",
		Message: "waiting for render bbbbbbbbbbbbbbbb to be applied: 2 of 5 resources applied with it"}, PendingCondition(renderB, 2, 5))

	_, err := NewCompiler(0).Compile([]RuleSet{set("bad", 1, rule("nope("))})
	c := CannotAssessCondition(err)
	assert.Equal(t, metav1.ConditionUnknown, c.Status)
	assert.Equal(t, "CannotAssess", c.Reason)
	assert.Contains(t, c.Message, "cannot assess health: rule 0 of HealthRuleSet shop/bad: expression does not compile")
	assert.Equal(t, "cannot assess health: the cluster is unreachable (connection refused)",
		CannotAssessCondition(errors.New("the cluster is unreachable (connection refused)")).Message)
}
