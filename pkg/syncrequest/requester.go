// Package syncrequest records sync requests for convoy's controller: the annotation
// convoy.kumodo.io/sync-requested-at on the Release and an Event that names
// who asked. POST releases/NAME/sync and the observer's loops share it.
package syncrequest

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// ReasonSyncRequested is the reason of the Event of a sync request.
var ReasonSyncRequested = failure.Declare(failure.Reason{
	Name: "SyncRequested", Class: failure.ClassOutcome, Shows: []failure.Where{failure.Event},
	Means:  "a sync was requested (POST /sync, or self-heal in automatic mode); the note names who asked and why",
	Action: "nothing; convoy's controller syncs the Release",
})

// actionRequestSync is the action of that Event.
const actionRequestSync = "RequestSync"

// Requester records sync requests on Releases.
type Requester struct {
	releases convoyclient.ReleasesGetter
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// NewRequester returns a Requester that patches Releases through releases and
// records Events with recorder.
func NewRequester(releases convoyclient.ReleasesGetter, recorder events.EventRecorder, clk clock.PassiveClock) *Requester {
	return &Requester{releases: releases, recorder: recorder, clock: clk}
}

// Request records a sync request for the Release namespace/name on behalf of
// requester (a user name, or the observer's own name) and returns the time it
// recorded. A missing Release gives the API server's NotFound error unchanged,
// so that callers can tell it apart with apierrors.IsNotFound.
func (r *Requester) Request(ctx context.Context, namespace, name, requester, why string) (metav1.MicroTime, error) {
	now := metav1.NewMicroTime(r.clock.Now().UTC())
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{
				convoyv1alpha1.AnnotationSyncRequestedAt: now.Format(metav1.RFC3339Micro),
			},
		},
	})
	if err != nil {
		return now, fmt.Errorf("encoding sync annotation: %w", err)
	}
	release, err := r.releases.Releases(namespace).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: convoyv1alpha1.FieldManagerObserver})
	if err != nil {
		return now, fmt.Errorf("recording sync request on release %s/%s: %w", namespace, name, err)
	}
	note := fmt.Sprintf("Sync requested by %s", requester)
	if why != "" {
		note += ": " + why
	}
	r.recorder.Eventf(release, nil, corev1.EventTypeNormal, ReasonSyncRequested, actionRequestSync, "%s", truncate.String(note, truncate.EventNote))
	klog.FromContext(ctx).V(2).Info("Recorded sync request", "release", klog.KObj(release), "requester", requester, "at", now.Time)
	return now, nil
}
