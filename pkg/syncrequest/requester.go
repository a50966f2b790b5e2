// Package syncrequest records requests on Releases: sync requests for
// convoy's controller (the annotation convoy.kumodo.io/sync-requested-at)
// and refresh requests for the observer's drift loop
// (convoy.kumodo.io/refresh-requested-at), each with an Event that names
// who asked. POST releases/NAME/sync and /refresh and the observer's loops
// share it.
package syncrequest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/sync/singleflight"
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

// ReasonRefreshRequested is the reason of the Event of a refresh request.
var ReasonRefreshRequested = failure.Declare(failure.Reason{
	Name: "RefreshRequested", Class: failure.ClassOutcome, Shows: []failure.Where{failure.Event},
	Means:  "a refresh was requested (POST /refresh): the drift loop resolves the Release's source again now; the note names who asked",
	Action: "nothing; status.lastHandledRefreshAt shows when it was handled, status.lastResolved what the source resolved to",
})

// The actions of those Events.
const (
	actionRequestSync    = "RequestSync"
	actionRequestRefresh = "RequestRefresh"
)

// Requester records sync requests on Releases.
type Requester struct {
	releases convoyclient.ReleasesGetter
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// refreshes are the refresh requests being recorded, by Release.
	refreshes singleflight.Group
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
	return r.request(ctx, namespace, name, requester, why, "sync", convoyv1alpha1.AnnotationSyncRequestedAt, ReasonSyncRequested, actionRequestSync)
}

// Refresh records a refresh request for the Release namespace/name on
// behalf of requester, as Request does a sync request. Requests of the
// same Release while one is being recorded join it: they get its time,
// and the Event names the first requester (a script that refreshes in a
// loop costs the API server one patch at a time per Release).
func (r *Requester) Refresh(ctx context.Context, namespace, name, requester string) (metav1.MicroTime, error) {
	v, err, _ := r.refreshes.Do(namespace+"/"+name, func() (any, error) {
		return r.request(ctx, namespace, name, requester, "", "refresh", convoyv1alpha1.AnnotationRefreshRequestedAt, ReasonRefreshRequested, actionRequestRefresh)
	})
	at, _ := v.(metav1.MicroTime)
	return at, err
}

func (r *Requester) request(ctx context.Context, namespace, name, requester, why, what, annotation, reason, action string) (metav1.MicroTime, error) {
	now := metav1.NewMicroTime(r.clock.Now().UTC())
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{annotation: now.Format(metav1.RFC3339Micro)},
		},
	})
	if err != nil {
		return now, fmt.Errorf("encoding %s annotation: %w", what, err)
	}
	release, err := r.releases.Releases(namespace).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: convoyv1alpha1.FieldManagerObserver})
	if err != nil {
		return now, fmt.Errorf("recording %s request on release %s/%s: %w", what, namespace, name, err)
	}
	note := fmt.Sprintf("%s%s requested by %s", strings.ToUpper(what[:1]), what[1:], requester)
	if why != "" {
		note += ": " + why
	}
	r.recorder.Eventf(release, nil, corev1.EventTypeNormal, reason, action, "%s", truncate.String(note, truncate.EventNote))
	klog.FromContext(ctx).V(2).Info("Recorded request", "what", what, "release", klog.KObj(release), "requester", requester, "at", now.Time)
	return now, nil
}
