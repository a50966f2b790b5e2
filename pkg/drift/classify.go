package drift

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// Reasons of the failures found before the compare: the InSync condition's
// own (compare.ReasonInSync, ReasonDrifted, ReasonUndetermined) are the
// compare engine's.
var (
	ReasonRenderFailed = failure.Declare(failure.Reason{
		Name: "RenderFailed", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "the Release's source or render is not valid input, or names something that does not exist: the cause's reason (SourceNotFound, ManifestInvalid, TemplateFailed, ArtifactNotFound, ...) follows it in the message",
		Action: "look up the cause's reason; /preview shows the same error",
	})
	ReasonRenderNotStored = failure.Declare(failure.Reason{
		Name: "RenderNotStored", Class: failure.ClassNotFound, Shows: []failure.Where{failure.Response},
		Means:  "the stored render asked for by GET /diff?render=REF or /preview?render=REF is not in the render store (404); no condition has it",
		Action: "name a renderRef the ReleaseInventory or the Release's status lists",
	})
)

// IsRenderNotStored reports whether err is the failure of a stored render
// asked for (Options.Render) that is not stored.
func IsRenderNotStored(err error) bool {
	_, ok := failure.Find(err, ReasonRenderNotStored)
	return ok
}

// step is what failed before the compare.
type step uint8

const (
	// stepAccess: getting the Access of the Release (its Cluster and
	// identity).
	stepAccess step = iota
	// stepRender: getting its desired render (the source, the render, the
	// render store).
	stepRender
)

// classifyBeforeCompare gives an error found before the compare (at step)
// the reason of an Undetermined result, the one classifier of the InSync
// condition before the compare (the compare engine classifies the errors
// of each object: classifyObjectFailure). It names no reason of the
// packages whose errors it judges (pkg/source, pkg/render, pkg/cluster):
// it goes by class, asks pkg/cluster whether an error is a refused
// impersonation, and names only its own reasons and the shared ones of
// pkg/failure.
//
//   - a stored render asked for that is not stored: ReasonRenderNotStored;
//   - an API server's refusal to let convoy-apiserver impersonate the
//     Release's identity: cluster.ReasonImpersonationNotGranted, with what
//     to bind;
//   - the API server's refusal of the identity (a 403 Status anywhere in
//     err): failure.ReasonForbidden, naming identity;
//   - a *failure.Error: its cause (the innermost failure: a refused address
//     under a failed read of an input under a failed render is
//     AddressNotAllowed), with the context of the outermost failure of the
//     same reason. At stepRender, a cause of class Invalid or NotFound (the
//     Release's own content, or something it names) is ReasonRenderFailed,
//     the cause's reason first in its message; every other class (a limit,
//     a refusal, something unavailable) keeps its own reason;
//   - any other error: ReasonRenderFailed at stepRender; at stepAccess,
//     failure.ReasonInternalError (the Targets give every error of the
//     access a reason of their own: one without is a bug).
//
// The result wraps err (RenderFailed wraps its cause).
func classifyBeforeCompare(err error, s step, identity cluster.Identity) *failure.Error {
	if errors.Is(err, render.ErrNotStored) {
		return failure.Quiet(ReasonRenderNotStored, err, "%v", err)
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
	cause, ok := failure.Cause(err)
	switch {
	case !ok && s == stepRender:
		return failure.Quiet(ReasonRenderFailed, err, "%v", err)
	case !ok:
		return failure.New(failure.ReasonInternalError, err, "the access of the release failed without a reason")
	}
	cause, _ = failure.Find(err, cause.Reason) // the outermost of that reason says where
	switch failure.ClassOf(cause.Reason) {
	case failure.ClassInvalid, failure.ClassNotFound:
		if s == stepRender {
			return failure.Quiet(ReasonRenderFailed, cause, "%s: %s", cause.Reason, cause.Message)
		}
	}
	return cause
}
