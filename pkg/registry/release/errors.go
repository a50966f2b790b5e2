package release

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// ReasonRenderFailed is the Status reason of a request whose Release cannot
// be rendered.
const ReasonRenderFailed metav1.StatusReason = "RenderFailed"

// resolveError turns an error of desired.Resolver into a Status a client can
// read: 422 with the cluster's reason when the target cluster cannot be
// had, 404 for a render that is not stored, 422 RenderFailed with the cause
// for a render that fails, 503 when its inputs cannot be read just now, 500
// with the message for anything else.
func resolveError(release *convoyv1alpha1.Release, ref string, err error) error {
	var renderErr *render.Error
	var clusterErr *cluster.Error
	switch {
	case errors.As(err, &clusterErr):
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusUnprocessableEntity,
			Reason: metav1.StatusReason(clusterErr.Reason),
			Details: &metav1.StatusDetails{
				Group: subresourcesv1alpha1.GroupName, Kind: "releases", Name: release.Name,
			},
			Message: fmt.Sprintf("release %s/%s: %s", release.Namespace, release.Name, clusterErr.Message),
		}}
	case errors.Is(err, render.ErrNotStored):
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusNotFound,
			Reason: metav1.StatusReasonNotFound,
			Details: &metav1.StatusDetails{
				Group: subresourcesv1alpha1.GroupName, Kind: "releases", Name: release.Name,
			},
			Message: fmt.Sprintf("render %s is not in the render store of release %s/%s", ref, release.Namespace, release.Name),
		}}
	case errors.As(err, &renderErr) && renderErr.Reason == render.ReasonInputUnavailable:
		// The inputs could not be read just now: not the Release's fault.
		return apierrors.NewServiceUnavailable(fmt.Sprintf("rendering release %s/%s: %s", release.Namespace, release.Name, renderErr.Message))
	case errors.As(err, &renderErr):
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusUnprocessableEntity,
			Reason: ReasonRenderFailed,
			Details: &metav1.StatusDetails{
				Group: subresourcesv1alpha1.GroupName, Kind: "releases", Name: release.Name,
				Causes: []metav1.StatusCause{{Type: metav1.CauseType(renderErr.Reason), Message: renderErr.Message}},
			},
			Message: fmt.Sprintf("rendering release %s/%s failed (%s): %s", release.Namespace, release.Name, renderErr.Reason, renderErr.Message),
		}}
	default:
		return apierrors.NewInternalError(fmt.Errorf("release %s/%s: %w", release.Namespace, release.Name, err))
	}
}
