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
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// Status reasons of a request whose Release cannot be resolved.
const (
	// ReasonRenderFailed: the Release cannot be rendered.
	ReasonRenderFailed = metav1.StatusReason(drift.ReasonRenderFailed)
	// ReasonIdentityForbidden: the identity the Release acts as may not read
	// one of its inputs, its render store or the Secret of its Cluster. Not
	// "Forbidden", which would say that the user asking may not.
	ReasonIdentityForbidden metav1.StatusReason = "IdentityForbidden"
)

// statusOf maps the reason of a failure of pkg/drift (classified there) to
// a Status a client can read:
//
//   - Forbidden: 422 IdentityForbidden (the Release's identity was refused,
//     not the user asking);
//   - RenderNotStored: 404;
//   - RenderFailed: 422 with the render's reason as the cause, or 503 when
//     the render's inputs could not be read just now (InputUnavailable);
//   - ClusterUnreachable, SourceUnreachable, FetchTimeout: 503;
//   - InternalError, and an error without a reason: 500;
//   - any other reason (ClusterNotFound, ClusterConfigInvalid,
//     AddressNotAllowed, the limits of a render, the other failures of a
//     source's fetch): 422 with that reason.
func statusOf(release *convoyv1alpha1.Release, ref string, err error) error {
	id := release.Namespace + "/" + release.Name
	f, ok := failure.As(err)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("release %s: %w", id, err))
	}
	switch f.Reason {
	case failure.ReasonForbidden:
		return releaseStatus(release, http.StatusUnprocessableEntity, ReasonIdentityForbidden,
			fmt.Sprintf("release %s: the identity it acts as was refused: %s", id, f.Message))
	case drift.ReasonRenderNotStored:
		return releaseStatus(release, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("render %s is not in the render store of release %s", ref, id))
	case drift.ReasonRenderFailed:
		cause, ok := failure.As(f.Err)
		switch {
		case !ok:
			return apierrors.NewInternalError(fmt.Errorf("rendering release %s: %w", id, f))
		case cause.Reason == source.ReasonInputUnavailable:
			// The inputs could not be read just now: not the Release's fault.
			return apierrors.NewServiceUnavailable(fmt.Sprintf("rendering release %s: %s", id, cause.Message))
		}
		status := releaseStatus(release, http.StatusUnprocessableEntity, ReasonRenderFailed,
			fmt.Sprintf("rendering release %s failed (%s): %s", id, cause.Reason, cause.Message))
		status.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseType(cause.Reason), Message: cause.Message}}
		return status
	case failure.ReasonClusterUnreachable, source.ReasonSourceUnreachable, source.ReasonFetchTimeout:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("release %s: %s", id, f.Message))
	case failure.ReasonInternalError:
		return apierrors.NewInternalError(fmt.Errorf("release %s: %w", id, f))
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
