package release

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Status reasons of a request whose Release cannot be resolved.
var (
	// ReasonRenderFailed: the Release cannot be rendered.
	ReasonRenderFailed = metav1.StatusReason(drift.ReasonRenderFailed)
)

// ReasonIdentityForbidden: the identity the Release acts as may not read
// one of its inputs, its render store or the Secret of its Cluster
// (failure.ReasonForbidden). Not "Forbidden", which would say that the user
// asking may not.
const ReasonIdentityForbidden metav1.StatusReason = "IdentityForbidden"

// statusOf maps a failure of pkg/drift (classified there) to a Status a
// client can read, by the class of its reason (pkg/failure), naming no
// reason of another package:
//
//   - a stored render asked for (?render=REF) that is not stored, or a
//     revision asked for (?revision=REV) that the source does not have:
//     404, the NotFounds of the request itself;
//   - Unavailable: 503 (may pass on a retry);
//   - Internal (and an error without a reason): 500;
//   - Invalid, NotFound (of an input the Release names: the Release itself
//     was found), Forbidden and OverLimit: 422, with the failure's reason
//     as the status reason; RenderFailed carries its cause's reason as the
//     cause type, and Forbidden, which a client would read as a refusal of
//     the user asking, is IdentityForbidden.
func statusOf(release *convoyv1alpha1.Release, opts *subresourcesv1alpha1.ReleaseRenderOptions, err error) error {
	id := release.Namespace + "/" + release.Name
	if drift.IsRenderNotStored(err) {
		return releaseStatus(release, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("render %s is not in the render store of release %s", opts.Render, id))
	}
	f, ok := failure.As(err)
	if ok && opts.Revision != "" && drift.IsRevisionNotFound(err) {
		cause, _ := failure.Cause(err)
		return releaseStatus(release, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("release %s: no revision %s of its source: %s", id, opts.Revision, cause.Message))
	}
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("release %s: %w", id, err))
	}
	switch failure.ClassOf(f.Reason) {
	case failure.ClassUnavailable:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("release %s: %s", id, f.Message))
	case failure.ClassInternal, failure.ClassOutcome:
		return apierrors.NewInternalError(fmt.Errorf("release %s: %w", id, f))
	}
	if metav1.StatusReason(f.Reason) == metav1.StatusReasonForbidden {
		return releaseStatus(release, http.StatusUnprocessableEntity, ReasonIdentityForbidden,
			fmt.Sprintf("release %s: the identity it acts as was refused: %s", id, f.Message))
	}
	if cause, ok := failure.As(f.Err); ok && f.Reason == drift.ReasonRenderFailed {
		status := releaseStatus(release, http.StatusUnprocessableEntity, ReasonRenderFailed,
			fmt.Sprintf("rendering release %s failed (%s): %s", id, cause.Reason, cause.Message))
		status.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseType(cause.Reason), Message: cause.Message}}
		return status
	}
	return releaseStatus(release, http.StatusUnprocessableEntity, metav1.StatusReason(f.Reason), fmt.Sprintf("release %s: %s", id, f.Message))
}

// releaseStatus is a failure Status about release.
func releaseStatus(release *convoyv1alpha1.Release, code int32, reason metav1.StatusReason, message string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    code,
		Reason:  reason,
		Details: &metav1.StatusDetails{Group: subresourcesv1alpha1.GroupName, Kind: "releases", Name: release.Name},
		Message: message,
	}}
}

// recoverAsInternalError turns a panic of a handler into a 500 for the
// client (*err), with the stack in the log. The generic server would
// recover it too, but by aborting the connection, which a client through
// the aggregator sees as an unavailable service.
func recoverAsInternalError(ctx context.Context, err *error) {
	if r := recover(); r != nil {
		*err = apierrors.NewInternalError(failure.Recovered(ctx, r))
	}
}
