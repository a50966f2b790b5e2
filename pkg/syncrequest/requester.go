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
	"sync"
	"time"

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

// RefreshJoin is how long after a refresh request of a Release that this
// replica recorded a new one joins it: it gets its time, and nothing is
// written (a script that refreshes in a loop costs the API server at most
// one patch and one Event per Release per second). The drift loop handles
// a request RefreshDelay (a second) after it was recorded, so the
// requests it joins still come before the pass resolves the source.
const RefreshJoin = time.Second

// Requester records sync requests on Releases.
type Requester struct {
	releases convoyclient.ReleasesGetter
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// refreshes are the refresh requests being recorded, by Release.
	refreshes singleflight.Group

	mu sync.Mutex
	// recorded are the times of the refresh requests recorded within
	// RefreshJoin, by Release; pruned when it doubles.
	recorded map[string]metav1.MicroTime
	pruneAt  int
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
// same Release while one is being recorded, or within RefreshJoin after
// it, join it: they get its time, and its Event names the first
// requester.
func (r *Requester) Refresh(ctx context.Context, namespace, name, requester string) (metav1.MicroTime, error) {
	key := namespace + "/" + name
	if at, ok := r.recentRefresh(key); ok {
		return at, nil
	}
	v, err, _ := r.refreshes.Do(key, func() (any, error) {
		if at, ok := r.recentRefresh(key); ok {
			return at, nil
		}
		at, err := r.request(ctx, namespace, name, requester, "", "refresh", convoyv1alpha1.AnnotationRefreshRequestedAt, ReasonRefreshRequested, actionRequestRefresh)
		if err == nil {
			r.keepRefresh(key, at)
		}
		return at, err
	})
	at, _ := v.(metav1.MicroTime)
	return at, err
}

// recentRefresh is the time of the refresh request of key recorded within
// RefreshJoin.
func (r *Requester) recentRefresh(key string) (metav1.MicroTime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.recorded[key]
	return at, ok && r.clock.Since(at.Time) < RefreshJoin
}

// keepRefresh keeps the time of the refresh request of key. The requests
// older than RefreshJoin are dropped each time the map doubles: it holds
// about the Releases refreshed within the last RefreshJoin, at a constant
// cost per request.
func (r *Requester) keepRefresh(key string, at metav1.MicroTime) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recorded == nil {
		r.recorded = map[string]metav1.MicroTime{}
	}
	r.recorded[key] = at
	if len(r.recorded) <= r.pruneAt {
		return
	}
	for k, t := range r.recorded {
		if r.clock.Since(t.Time) >= RefreshJoin {
			delete(r.recorded, k)
		}
	}
	r.pruneAt = 2*len(r.recorded) + 64
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
