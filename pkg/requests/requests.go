// Package requests records requests on Releases, each an annotation and an
// Event that names who asked: sync requests for convoy's controller
// (sync.go: convoy.kumodo.io/sync-requested-at) and refresh requests for the
// observer's drift loop (refresh.go: convoy.kumodo.io/refresh-requested-at).
// POST releases/NAME/sync and /refresh and the observer's loops share it.
package requests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Requester records sync and refresh requests on Releases.
type Requester struct {
	releases convoyclient.ReleasesGetter
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// refreshes are the refresh requests being recorded or recorded within
	// RefreshJoin, which new ones join.
	refreshes refreshJoins
}

// NewRequester returns a Requester that patches Releases through releases and
// records Events with recorder.
func NewRequester(releases convoyclient.ReleasesGetter, recorder events.EventRecorder, clk clock.PassiveClock) *Requester {
	return &Requester{releases: releases, recorder: recorder, clock: clk}
}

// request sets annotation of the Release namespace/name to now and records
// an Event (reason, action) that says requester asked for what, and why
// when it is set.
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
