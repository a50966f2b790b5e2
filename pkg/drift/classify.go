package drift

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// Reasons of the InSync condition: compare.ReasonInSync (True),
// compare.ReasonDrifted (False) and ReasonUndetermined (Unknown), whose
// message begins with the reason of the result (RenderFailed,
// ClusterUnreachable, Forbidden, ...).
const (
	// ReasonUndetermined: the check could not complete.
	ReasonUndetermined = "Undetermined"
	// ReasonRenderFailed: the source or the render failed; a reason of an
	// Undetermined result found before the compare, whose message begins
	// with the render's own reason (SourceNotFound, TemplateFailed, ...).
	ReasonRenderFailed = "RenderFailed"
	// ReasonRenderNotStored: the stored render asked for by its renderRef
	// (GET /diff?render=REF, /preview?render=REF) is not in the render
	// store. No condition has it.
	ReasonRenderNotStored = "RenderNotStored"
)

// classify gives an error found before the compare (getting the Access of
// the Release, or its desired render) the reason of an Undetermined result,
// the one classifier of the InSync condition before the compare (the compare
// engine classifies the errors of each object):
//
//   - a stored render asked for that is not stored: ReasonRenderNotStored;
//   - a namespace that has not granted convoy-apiserver the impersonation
//     of its ServiceAccounts: cluster.ReasonImpersonationNotGranted, with
//     what to bind;
//   - an input, a stored render or the Secret of a Cluster that identity
//     may not read: failure.ReasonForbidden, naming identity;
//   - a connection the address policy refused, wherever it happened (the
//     render's discovery is the first connection to the cluster):
//     egress.ReasonAddressNotAllowed;
//   - an answer of the cluster's API server over its limit, wherever it
//     happened (the render's discovery, the read of an input):
//     cluster.ReasonResponseTooLarge;
//   - a failure of the Access (ClusterNotFound, ClusterConfigInvalid), a
//     limit of the render (TooManyObjects, RenderTimeout, ...) or a source
//     that could not be fetched (SourceUnreachable, SourceUnauthorized,
//     ArtifactNotFound, DigestMismatch, ...): its reason;
//   - an input that could not be read because the network failed:
//     ClusterUnreachable;
//   - any other failure of the render: ReasonRenderFailed, the render's
//     reason first in the message;
//   - an error that names no reason: otherwise.
//
// The result wraps err.
func classify(err error, otherwise string, identity cluster.Identity) *failure.Error {
	if errors.Is(err, render.ErrNotStored) {
		return failure.Quiet(ReasonRenderNotStored, err, "%v", err)
	}
	if f, ok := failure.Find(err, cluster.ReasonImpersonationNotGranted); ok {
		return f
	}
	if f, ok := cluster.ImpersonationRefused(err, identity); ok {
		return f
	}
	if apierrors.IsForbidden(err) {
		if f, ok := failure.Find(err, failure.ReasonForbidden); ok {
			return f // it says who was refused
		}
		return failure.New(failure.ReasonForbidden, err, "%s may not read an input of the release", identity)
	}
	if f, ok := failure.Find(err, egress.ReasonAddressNotAllowed); ok {
		return f
	}
	if f, ok := failure.Find(err, cluster.ReasonResponseTooLarge); ok {
		return f
	}
	f, ok := failure.As(err)
	switch {
	case !ok:
		return failure.Quiet(otherwise, err, "%v", err)
	case otherwise != ReasonRenderFailed, render.IsLimit(f.Reason), source.IsFetchFailure(f.Reason):
		return f
	case f.Reason == source.ReasonInputUnavailable && egress.NetworkFailure(f) != "":
		return failure.Quiet(failure.ReasonClusterUnreachable, err, "the cluster is unreachable (%s): %s", egress.NetworkFailure(f), f.Message)
	}
	return failure.Quiet(ReasonRenderFailed, err, "%s: %s", f.Reason, f.Message)
}
