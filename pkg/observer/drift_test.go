package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func TestInterval(t *testing.T) {
	r := &convoyv1alpha1.Release{}
	assert.Equal(t, DefaultInterval, Interval(r))
	r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: time.Minute}
	assert.Equal(t, time.Minute, Interval(r))
}

func TestPendingRefresh(t *testing.T) {
	now := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	release := func(annotation, handled string) *convoyv1alpha1.Release {
		r := &convoyv1alpha1.Release{}
		if annotation != "" {
			r.Annotations = map[string]string{convoyv1alpha1.AnnotationRefreshRequestedAt: annotation}
		}
		r.Status.LastHandledRefreshAt = handled
		return r
	}
	for _, tc := range []struct {
		name, annotation, handled, want string
		at                              time.Time
	}{
		{name: "none"},
		{name: "handled", annotation: "2026-12-04T19:00:00.000001Z", handled: "2026-12-04T19:00:00.000001Z"},
		{name: "new", annotation: "2026-12-04T19:00:00.000001Z", handled: "2026-12-04T18:00:00Z", want: "2026-12-04T19:00:00.000001Z",
			at: time.Date(2026, 12, 4, 19, 0, 0, 1000, time.UTC)},
		{name: "kubectl annotate with a word", annotation: "now", want: "now", at: now},
		{name: "older than the one handled (landed out of order)", annotation: "2026-12-04T19:00:00.000001Z", handled: "2026-12-04T19:00:00.000002Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, at := pendingRefresh(release(tc.annotation, tc.handled), now)
			assert.Equal(t, tc.want, v)
			assert.True(t, tc.at.Equal(at), "%s", at)
		})
	}
	assert.True(t, refreshRequested(release("", ""), release("a", "")))
	assert.False(t, refreshRequested(release("a", ""), release("a", "x")), "a status write is no request")
	assert.False(t, refreshRequested(release("a", ""), release("", "")))
}
