package requests

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonRefreshRequested is the reason of the Event of a refresh request.
var ReasonRefreshRequested = failure.Declare(failure.Reason{
	Name: "RefreshRequested", Class: failure.ClassOutcome, Shows: []failure.Where{failure.Event},
	Means:  "a refresh was requested (POST /refresh): the drift loop resolves the Release's source again now; the note names who asked",
	Action: "nothing; status.lastHandledRefreshAt shows when it was handled, status.lastResolved what the source resolved to",
})

// actionRequestRefresh is the action of the Event of a refresh request.
const actionRequestRefresh = "RequestRefresh"

// RefreshJoin is how long after a refresh request of a Release that this
// replica recorded a new one joins it: it gets its time, and nothing is
// written (a script that refreshes in a loop costs the API server at most
// one patch and one Event per Release per second). The drift loop handles
// a request RefreshDelay (a second) after it was recorded, so the
// requests it joins still come before the pass resolves the source.
const RefreshJoin = time.Second

// refreshJoins are the refresh requests a new one joins: those being
// recorded, by Release, and the times of those recorded within
// RefreshJoin.
type refreshJoins struct {
	recording singleflight.Group

	mu sync.Mutex
	// recorded are the times of the refresh requests recorded within
	// RefreshJoin, by Release; pruned when it doubles.
	recorded map[string]metav1.MicroTime
	pruneAt  int
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
	v, err, _ := r.refreshes.recording.Do(key, func() (any, error) {
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
	j := &r.refreshes
	j.mu.Lock()
	defer j.mu.Unlock()
	at, ok := j.recorded[key]
	return at, ok && r.clock.Since(at.Time) < RefreshJoin
}

// keepRefresh keeps the time of the refresh request of key. The requests
// older than RefreshJoin are dropped each time the map doubles: it holds
// about the Releases refreshed within the last RefreshJoin, at a constant
// cost per request.
func (r *Requester) keepRefresh(key string, at metav1.MicroTime) {
	j := &r.refreshes
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.recorded == nil {
		j.recorded = map[string]metav1.MicroTime{}
	}
	j.recorded[key] = at
	if len(j.recorded) <= j.pruneAt {
		return
	}
	for k, t := range j.recorded {
		if r.clock.Since(t.Time) >= RefreshJoin {
			delete(j.recorded, k)
		}
	}
	j.pruneAt = 2*len(j.recorded) + 64
}
