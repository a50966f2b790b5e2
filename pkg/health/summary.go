package health

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Reasons of the Healthy condition of a Release: outcomes, declared with
// pkg/failure so that every reason is listed in one registry.
var (
	ReasonHealthy = outcome("Healthy",
		"every resource is Healthy (status True).")
	ReasonProgressing = outcome("Progressing",
		"the worst resource is Progressing (status False).")
	ReasonUnknown = outcome("Unknown",
		"the worst resource is Unknown (status Unknown).")
	ReasonSuspended = outcome("Suspended",
		"the worst resource is Suspended: its controller stopped on purpose (status False: the Release is not healthy, but nothing failed).")
	ReasonDegraded = outcome("Degraded",
		"a resource is Degraded (status False).")
	ReasonNotConfigured = outcome("NotConfigured",
		"the Release has no spec.healthAssessment (status True); convoy treats every wave and runAfter: Healthy hook as healthy.")
	ReasonPending = outcome("Pending",
		"not every inventory entry is at the current render, status.lastAttempted.renderRef, yet (status Unknown).")
	ReasonCannotAssess = outcome("CannotAssess",
		"the health cannot be assessed: the cluster is unreachable, a rule does not compile, a selector is not valid (status Unknown). status.healthSummary keeps its last value.")
)

// outcome declares a reason of the Healthy condition that is not a failure
// of convoy-apiserver: what it says is in the Health docs.
func outcome(name, means string) string {
	return failure.Declare(failure.Reason{Name: name, Class: failure.ClassOutcome, Shows: []failure.Where{failure.Healthy},
		Means: means, Action: "see the Health assessment docs: the per-object states of /health name the objects and the rules"})
}

// Summarize counts the states: total, healthy, suspended, progressing,
// degraded and unknown. An entry without a state (never assessed) counts as
// unknown.
func Summarize(states []convoyv1alpha1.InventoryEntryStatus) convoyv1alpha1.HealthSummary {
	var s convoyv1alpha1.HealthSummary
	for _, st := range states {
		s.Total++
		switch st.State {
		case convoyv1alpha1.HealthHealthy:
			s.Healthy++
		case convoyv1alpha1.HealthSuspended:
			s.Suspended++
		case convoyv1alpha1.HealthProgressing:
			s.Progressing++
		case convoyv1alpha1.HealthDegraded:
			s.Degraded++
		default:
			s.Unknown++
		}
	}
	return s
}

// severity orders the states: Healthy < Suspended < Progressing < Unknown <
// Degraded. A state that is none of them ranks as Unknown.
func severity(state convoyv1alpha1.HealthState) int {
	switch state {
	case convoyv1alpha1.HealthHealthy:
		return 0
	case convoyv1alpha1.HealthSuspended:
		return 1
	case convoyv1alpha1.HealthProgressing:
		return 2
	case convoyv1alpha1.HealthDegraded:
		return 4
	default:
		return 3
	}
}

// normalize maps a state that is none of the five to Unknown.
func normalize(state convoyv1alpha1.HealthState) convoyv1alpha1.HealthState {
	switch state {
	case convoyv1alpha1.HealthHealthy, convoyv1alpha1.HealthSuspended, convoyv1alpha1.HealthProgressing, convoyv1alpha1.HealthDegraded:
		return state
	}
	return convoyv1alpha1.HealthUnknown
}

// Worst returns the worst state of states in the order Healthy < Suspended <
// Progressing < Unknown < Degraded; Healthy when there is none.
func Worst(states []convoyv1alpha1.InventoryEntryStatus) convoyv1alpha1.HealthState {
	worst := convoyv1alpha1.HealthHealthy
	for _, st := range states {
		if severity(st.State) > severity(worst) {
			worst = normalize(st.State)
		}
	}
	return worst
}

// ConditionFor maps the worst state of a Release to the status and reason of
// its Healthy condition: Healthy → True/Healthy, Suspended →
// False/Suspended, Progressing → False/Progressing, Unknown →
// Unknown/Unknown, Degraded → False/Degraded.
func ConditionFor(state convoyv1alpha1.HealthState) (metav1.ConditionStatus, string) {
	switch normalize(state) {
	case convoyv1alpha1.HealthHealthy:
		return metav1.ConditionTrue, ReasonHealthy
	case convoyv1alpha1.HealthSuspended:
		return metav1.ConditionFalse, ReasonSuspended
	case convoyv1alpha1.HealthProgressing:
		return metav1.ConditionFalse, ReasonProgressing
	case convoyv1alpha1.HealthDegraded:
		return metav1.ConditionFalse, ReasonDegraded
	}
	return metav1.ConditionUnknown, ReasonUnknown
}

// HealthyCondition is the Healthy condition of a Release whose inventory
// entries, all at the current render, have states. Its status and reason
// come from the worst state (ConditionFor); its message counts the healthy
// resources and names the first resource in the worst state, e.g. "2 of 3
// resources healthy; Deployment.apps shop/web is Progressing: 1 of 3
// replicas available". The caller sets observedGeneration and
// lastTransitionTime.
func HealthyCondition(states []convoyv1alpha1.InventoryEntryStatus) metav1.Condition {
	worst := Worst(states)
	status, reason := ConditionFor(worst)
	summary := Summarize(states)
	cond := metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: status, Reason: reason}
	if summary.Total == 0 {
		cond.Message = "no resources to assess"
		return cond
	}
	counts := fmt.Sprintf("%d of %d resources healthy", summary.Healthy, summary.Total)
	if worst == convoyv1alpha1.HealthHealthy {
		cond.Message = counts
		return cond
	}
	var first *convoyv1alpha1.InventoryEntryStatus
	others := 0
	for i := range states {
		if normalize(states[i].State) != worst {
			continue
		}
		if first == nil {
			first = &states[i]
		} else {
			others++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s; %s is %s", counts, first.Describe(), worst)
	if first.Message != "" {
		b.WriteString(": " + first.Message)
	}
	if others > 0 {
		fmt.Fprintf(&b, " (and %d more %s)", others, worst)
	}
	cond.Message = truncate.String(b.String(), truncate.Condition)
	return cond
}

// NotConfiguredCondition is the Healthy condition of a Release without
// spec.healthAssessment; its healthSummary is all zero.
func NotConfiguredCondition() metav1.Condition {
	return metav1.Condition{
		Type:    convoyv1alpha1.ConditionHealthy,
		Status:  metav1.ConditionTrue,
		Reason:  ReasonNotConfigured,
		Message: "spec.healthAssessment is not set: every resource counts as healthy",
	}
}

// PendingCondition is the Healthy condition of a Release while its inventory
// is not all at renderRef, the current render (status.lastAttempted):
// atRender of total entries are (no inventory yet: total is 0). The health
// of the previous render does not count.
func PendingCondition(renderRef string, atRender, total int) metav1.Condition {
	msg := fmt.Sprintf("waiting for render %s to be applied: %d of %d resources applied with it", renderRef, atRender, total)
	if total == 0 {
		msg = fmt.Sprintf("waiting for render %s to be applied: no inventory yet", renderRef)
	}
	return metav1.Condition{
		Type:    convoyv1alpha1.ConditionHealthy,
		Status:  metav1.ConditionUnknown,
		Reason:  ReasonPending,
		Message: msg,
	}
}

// CannotAssessCondition is the Healthy condition of a Release whose health
// cannot be assessed, with the cause: an unreachable cluster, a rule that
// does not compile, a selector that is not valid. The caller keeps the last
// healthSummary.
func CannotAssessCondition(cause error) metav1.Condition {
	msg := "cannot assess health"
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return metav1.Condition{
		Type:    convoyv1alpha1.ConditionHealthy,
		Status:  metav1.ConditionUnknown,
		Reason:  ReasonCannotAssess,
		Message: truncate.String(msg, truncate.Condition),
	}
}
