package health

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// ErrNotFound is a read error for an object that is not on the cluster, for
// callers that find it missing without an API error (a nil object from a
// cache). A NotFound error of the API server means the same.
var ErrNotFound = errors.New("the object is not on the cluster")

// Assess gives the next status of one inventory entry from its previous
// status (nil the first time), the verdict of the rules, the error of reading
// the object (which wins over the verdict), the Release's deadline (nil:
// none) and now, as docs/contributors/internals.md ("The health loop") and
// docs/users/health-rules.md say. lastTransitionTime moves with the state,
// assessedRenderRef is entry.RenderRef, hookPhase is kept (the hook
// poller's); new times are cut to the second in the local zone, as a read of
// the stored status gives them back, and the message to the CRD's maximum.
func Assess(prev *convoyv1alpha1.InventoryEntryStatus, entry convoyv1alpha1.InventoryEntry, verdict Verdict, readErr error, deadline *time.Duration, now time.Time) convoyv1alpha1.InventoryEntryStatus {
	stamp := metav1.NewTime(now.Truncate(time.Second).Local())
	next := convoyv1alpha1.InventoryEntryStatus{
		ObjectKey:         entry.ObjectKey,
		AssessedRenderRef: entry.RenderRef,
	}
	if prev != nil {
		next.FirstUnhealthy = prev.FirstUnhealthy.DeepCopy()
		next.HookPhase = prev.HookPhase
	}

	switch {
	case readErr != nil:
		next.State = convoyv1alpha1.HealthUnknown
		next.Message = readErrorMessage(readErr)
	case verdict.Result == ResultPass:
		next.State = convoyv1alpha1.HealthHealthy
		next.Message = verdict.Message
		next.FirstUnhealthy = nil
	case verdict.Result == ResultSuspended:
		next.State = convoyv1alpha1.HealthSuspended
		next.Message = verdict.Message
		next.FirstUnhealthy = nil
	case verdict.Result == ResultFail:
		if next.FirstUnhealthy == nil {
			next.FirstUnhealthy = stamp.DeepCopy()
		}
		next.State = convoyv1alpha1.HealthProgressing
		if deadline != nil && !now.Before(next.FirstUnhealthy.Add(*deadline)) {
			next.State = convoyv1alpha1.HealthDegraded
		}
		next.Message = verdict.Message
	default:
		next.State = convoyv1alpha1.HealthUnknown
		next.Message = verdict.Message
		if next.Message == "" {
			next.Message = "the health rules cannot be evaluated"
		}
	}
	next.Message = truncate.String(next.Message, truncate.InventoryMessage)

	if prev != nil && prev.State == next.State && prev.LastTransitionTime != nil {
		next.LastTransitionTime = prev.LastTransitionTime.DeepCopy()
	} else {
		next.LastTransitionTime = stamp.DeepCopy()
	}
	return next
}

// readErrorMessage says why the object could not be read.
func readErrorMessage(err error) string {
	switch {
	case errors.Is(err, ErrNotFound), apierrors.IsNotFound(err):
		return "cannot read the object: it is not on the cluster"
	case meta.IsNoMatchError(err):
		return fmt.Sprintf("cannot read the object: the cluster does not serve its kind: %v", err)
	}
	return fmt.Sprintf("cannot read the object: %v", err)
}
