package drift

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
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

// IsRevisionNotFound reports whether err is the failure of a revision
// asked for (Options.Revision) that the source does not have: no such
// commit, ref, tag, digest or chart version (ArtifactNotFound).
func IsRevisionNotFound(err error) bool {
	_, ok := failure.Find(err, sourcefailure.ReasonArtifactNotFound)
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

// classifyBeforeCompare gives an error found before the compare (at s) the
// reason of an Undetermined result: the one classifier of InSync before the
// compare (the compare engine classifies each object's). It goes by class,
// naming no reason of the packages it judges: RenderNotStored, a refused
// impersonation, a refused identity, else the cause's reason (behind
// RenderFailed for the Release's own content). The rules, in order:
// docs/contributors/internals.md, "Failure reasons". The result wraps err.
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
