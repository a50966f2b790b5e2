package release

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/render"
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

// resolveError turns an error of cluster.Targets or desired.Resolver into a
// Status a client can read: 422 IdentityForbidden when the Release's
// identity may not read what it needs, 422 with the cluster's reason when
// the target cluster cannot be had, 404 for a render that is not stored, 422
// RenderFailed with the cause for a render that fails, 503 when its inputs
// cannot be read just now, 500 with the message for anything else.
func resolveError(release *convoyv1alpha1.Release, ref string, err error) error {
	var renderErr *render.Error
	var clusterErr *cluster.Error
	id := release.Namespace + "/" + release.Name
	switch {
	case apierrors.IsForbidden(err) || errors.As(err, &clusterErr) && clusterErr.Reason == cluster.ReasonForbidden:
		return releaseStatus(release, http.StatusUnprocessableEntity, ReasonIdentityForbidden,
			fmt.Sprintf("release %s: the identity it acts as was refused: %v", id, err))
	case errors.As(err, &clusterErr):
		return releaseStatus(release, http.StatusUnprocessableEntity, metav1.StatusReason(clusterErr.Reason),
			fmt.Sprintf("release %s: %s", id, clusterErr.Message))
	case errors.Is(err, render.ErrNotStored):
		return releaseStatus(release, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("render %s is not in the render store of release %s", ref, id))
	case errors.As(err, &renderErr) && render.IsLimit(renderErr.Reason):
		return releaseStatus(release, http.StatusUnprocessableEntity, metav1.StatusReason(renderErr.Reason),
			fmt.Sprintf("rendering release %s: %s", id, renderErr.Message))
	case errors.As(err, &renderErr) && renderErr.Reason == render.ReasonInputUnavailable:
		// The inputs could not be read just now: not the Release's fault.
		return apierrors.NewServiceUnavailable(fmt.Sprintf("rendering release %s: %s", id, renderErr.Message))
	case errors.As(err, &renderErr):
		status := releaseStatus(release, http.StatusUnprocessableEntity, ReasonRenderFailed,
			fmt.Sprintf("rendering release %s failed (%s): %s", id, renderErr.Reason, renderErr.Message))
		status.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseType(renderErr.Reason), Message: renderErr.Message}}
		return status
	default:
		return apierrors.NewInternalError(fmt.Errorf("release %s: %w", id, err))
	}
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
		*err = apierrors.NewInternalError(errors.New(compare.Panicked(ctx, r)))
	}
}
