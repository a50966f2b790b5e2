package requests

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonSyncRequested is the reason of the Event of a sync request.
var ReasonSyncRequested = failure.Declare(failure.Reason{
	Name: "SyncRequested", Class: failure.ClassOutcome, Shows: []failure.Where{failure.Event},
	Means:  "a sync was requested (POST /sync, or self-heal in automatic mode); the note names who asked and why",
	Action: "nothing; convoy's controller syncs the Release",
})

// actionRequestSync is the action of the Event of a sync request.
const actionRequestSync = "RequestSync"

// Request records a sync request for the Release namespace/name on behalf of
// requester (a user name, or the observer's own name) and returns the time it
// recorded. A missing Release gives the API server's NotFound error unchanged,
// so that callers can tell it apart with apierrors.IsNotFound.
func (r *Requester) Request(ctx context.Context, namespace, name, requester, why string) (metav1.MicroTime, error) {
	return r.request(ctx, namespace, name, requester, why, "sync", convoyv1alpha1.AnnotationSyncRequestedAt, ReasonSyncRequested, actionRequestSync)
}
