package compare

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/errtext"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Reasons of a Result: its verdict's (InSync, Drifted, Undetermined: the
// reasons of the InSync condition), and those of an Undetermined one. Callers
// add their own for errors found before the compare (RenderFailed,
// ClusterNotFound, ...). An object
// the credentials may not read or dry-run (401, or 403 not from admission)
// is failure.ReasonForbidden; a panic, failure.ReasonInternalError; a
// network failure, a timeout, a 5xx or a 429, failure.ReasonClusterUnreachable.
var (
	ReasonInSync = failure.Declare(failure.Reason{
		Name: "InSync", Class: failure.ClassOutcome, Shows: failure.InSyncAndResponse,
		Means:  "every object of the desired render is in sync with the cluster (InSync True)",
		Action: "nothing",
	})
	ReasonDrifted = failure.Declare(failure.Reason{
		Name: "Drifted", Class: failure.ClassOutcome, Shows: failure.InSyncAndResponse,
		Means:  "at least one object is Modified or Missing (InSync False); /diff lists the changes and who made them",
		Action: "read /diff (kubectl convoy release diff); in automatic mode convoy requests a sync",
	})
	ReasonUndetermined = failure.Declare(failure.Reason{
		Name: "Undetermined", Class: failure.ClassOutcome, Shows: []failure.Where{failure.InSync},
		Means:  "the check could not complete (InSync Unknown); its message begins with the reason of the failure",
		Action: "look up the reason its message begins with",
	})
	ReasonNoKindMatch = failure.Declare(failure.Reason{
		Name: "NoKindMatch", Class: failure.ClassNotFound, Shows: failure.InSyncAndResponse,
		Means:  "the target cluster does not serve the kind of an object, e.g. its CRD is not installed",
		Action: "install the CRD (an earlier wave of the Release may install it), or correct the object's apiVersion",
	})
	ReasonDryRunRejected = failure.Declare(failure.Reason{
		Name: "DryRunRejected", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "the API server answered the dry run of an object with a 4xx: an invalid object, a bad request, a denial by admission",
		Action: "correct the object as the message says; the real apply would be rejected the same way",
	})
	ReasonDryRunFailed = failure.Declare(failure.Reason{
		Name: "DryRunFailed", Class: failure.ClassUnavailable, Shows: failure.InSyncAndResponse,
		Means:  "the dry run failed without an answer of the API server that classifies it (an unexpected client-side error)",
		Action: "read convoy-apiserver's log for the error; the next pass tries again",
	})
	ReasonReadFailed = failure.Declare(failure.Reason{
		Name: "ReadFailed", Class: failure.ClassUnavailable, Shows: failure.InSyncAndResponse,
		Means:  "reading the live object failed with an error other than NotFound",
		Action: "read the message; the next pass tries again",
	})
	ReasonCanceled = failure.Declare(failure.Reason{
		Name: "Canceled", Class: failure.ClassUnavailable, Shows: failure.InSyncAndResponse,
		Means:  "the caller canceled the compare (a client that went away, a server that stops)",
		Action: "nothing: the next pass runs it again",
	})
	ReasonInvalidObject = failure.Declare(failure.Reason{
		Name: "InvalidObject", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "an object of the render has no kind or name",
		Action: "correct the object in the source",
	})
)

// step is the request of a compare that failed.
type step uint8

const (
	stepGet step = iota
	stepDryRun
)

func (s step) String() string {
	if s == stepGet {
		return "reading the live object"
	}
	return "the dry run"
}

// verb says the step as RBAC sees it: a server-side apply dry run is a
// patch.
func (s step) verb() string {
	if s == stepGet {
		return "get it"
	}
	return "patch it (the server-side apply dry run)"
}

// classifyObjectFailure returns the reason of err, met at step by who, and a short text
// of what happened to put before the error itself.
func classifyObjectFailure(s step, who string, err error) (reason, what string) {
	switch {
	case errors.Is(err, context.Canceled):
		return ReasonCanceled, s.String() + " was canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return failure.ReasonClusterUnreachable, s.String() + " timed out"
	case meta.IsNoMatchError(err):
		return ReasonNoKindMatch, "the cluster does not know the kind"
	case isResourceNotServed(err):
		return ReasonNoKindMatch, "the cluster does not serve the resource of the kind"
	}
	if reason := failure.ReasonOf(err); reason != "" {
		// An error that names its reason, such as the refusal of the
		// dialer to connect to an address that is not allowed.
		return reason, s.String() + " failed"
	}
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		return classifyObjectStatus(s, who, err, apiStatus)
	}
	if what := egress.NetworkFailure(err); what != "" {
		return failure.ReasonClusterUnreachable, "the cluster is unreachable (" + what + ")"
	}
	if s == stepGet {
		return ReasonReadFailed, "reading the live object failed"
	}
	return ReasonDryRunFailed, "the dry run failed"
}

// classifyObjectStatus classifies an answer of the API server.
func classifyObjectStatus(s step, who string, err error, apiStatus apierrors.APIStatus) (reason, what string) {
	status := apiStatus.Status()
	answer := fmt.Sprintf("%d %s", status.Code, status.Reason)
	if status.Code == 0 {
		answer = string(status.Reason)
	}
	switch {
	case apierrors.IsUnauthorized(err):
		return failure.ReasonForbidden, fmt.Sprintf("%s is not authorized (%s): the credentials of %s were refused", s, answer, who)
	case apierrors.IsForbidden(err):
		if s == stepDryRun && errtext.AdmissionDenied(status.Message) {
			return ReasonDryRunRejected, fmt.Sprintf("admission denied the dry run (%s)", answer)
		}
		return failure.ReasonForbidden, fmt.Sprintf("%s may not %s (%s)", who, s.verb(), answer)
	case apierrors.IsTooManyRequests(err):
		return failure.ReasonClusterUnreachable, fmt.Sprintf("the cluster throttled %s (%s)", s, answer)
	case status.Code >= 500, apierrors.IsInternalError(err), apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err):
		return failure.ReasonClusterUnreachable, fmt.Sprintf("the cluster failed %s with a server error (%s)", s, answer)
	case s == stepGet:
		return ReasonReadFailed, fmt.Sprintf("reading the live object failed (%s)", answer)
	default:
		return ReasonDryRunRejected, fmt.Sprintf("the cluster rejected the dry run (%s)", answer)
	}
}

// isResourceNotServed reports whether err is a 404 of the resource rather
// than of the object: the API server answers a path it does not serve (a
// kind whose CRD was removed since the mapper cached it) with a plain-text
// 404, which client-go reports as NotFound with an UnexpectedServerResponse
// cause, while a missing object comes with a Status naming it.
func isResourceNotServed(err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	if apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		return false
	}
	details := apiStatus.Status().Details
	return details == nil || details.Name == "" && details.Kind == ""
}
