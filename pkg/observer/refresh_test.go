package observer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

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
	long := "2026-12-04T19:00:00.0000000000000000000000000000000000000000000000000001Z" // a time, 73 bytes
	for _, tc := range []struct {
		name, annotation, handled, seen string
		// want is the request (record "": none).
		want refreshRequest
	}{
		{name: "none"},
		{name: "handled", annotation: "2026-12-04T19:00:00.000001Z", handled: "2026-12-04T19:00:00.000001Z"},
		{name: "new", annotation: "2026-12-04T19:00:00.000001Z", handled: "2026-12-04T18:00:00Z",
			want: refreshRequest{value: "2026-12-04T19:00:00.000001Z", at: time.Date(2026, 12, 4, 19, 0, 0, 1000, time.UTC), record: "2026-12-04T19:00:00.000001Z"}},
		{name: "another zone is recorded as written", annotation: "2026-12-04T20:30:00+01:00",
			want: refreshRequest{value: "2026-12-04T20:30:00+01:00", at: time.Date(2026, 12, 4, 19, 30, 0, 0, time.UTC), record: "2026-12-04T20:30:00+01:00"}},
		{name: "older than the one handled (landed out of order)", annotation: "2026-12-04T19:00:00.000001Z", handled: "2026-12-04T19:00:00.000002Z"},
		{name: "kubectl annotate with a word: a request of now", annotation: "now",
			want: refreshRequest{value: "now", at: now, record: "2026-12-04T20:00:00Z"}},
		{name: "the same word, handled by this replica", annotation: "now", handled: "2026-12-04T20:00:00Z", seen: "now"},
		{name: "another word", annotation: "again", handled: "2026-12-04T20:00:00Z", seen: "now",
			want: refreshRequest{value: "again", at: now, record: "2026-12-04T20:00:00Z"}},
		{name: "65 bytes that are no time", annotation: strings.Repeat("x", 65),
			want: refreshRequest{value: strings.Repeat("x", 65), at: now, record: "2026-12-04T20:00:00Z"}},
		{name: "a time of more than 64 bytes is recorded in 35", annotation: long,
			want: refreshRequest{value: long, at: time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC), record: "2026-12-04T19:00:00Z"}},
		{name: "far in the future: a request of now", annotation: "9999-12-31T00:00:00Z",
			want: refreshRequest{value: "9999-12-31T00:00:00Z", at: now, record: "2026-12-04T20:00:00Z"}},
		{name: "far in the future, handled by this replica", annotation: "9999-12-31T00:00:00Z", handled: "2026-12-04T20:00:00Z", seen: "9999-12-31T00:00:00Z"},
		{name: "a later request after the far future one", annotation: "2026-12-04T20:00:05Z", handled: "2026-12-04T20:00:00Z", seen: "9999-12-31T00:00:00Z",
			want: refreshRequest{value: "2026-12-04T20:00:05Z", at: time.Date(2026, 12, 4, 20, 0, 5, 0, time.UTC), record: "2026-12-04T20:00:05Z"}},
		{name: "a little ahead (another replica's clock) is taken at its time", annotation: "2026-12-04T20:00:30Z",
			want: refreshRequest{value: "2026-12-04T20:00:30Z", at: time.Date(2026, 12, 4, 20, 0, 30, 0, time.UTC), record: "2026-12-04T20:00:30Z"}},
		{name: "a far future status (an earlier version copied it) hides no request", annotation: "2026-12-04T19:00:00Z", handled: "9999-12-31T00:00:00Z",
			want: refreshRequest{value: "2026-12-04T19:00:00Z", at: time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC), record: "2026-12-04T19:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pendingRefresh(release(tc.annotation, tc.handled), tc.seen, now)
			assert.Equal(t, tc.want.record != "", ok)
			assert.Equal(t, tc.want.value, got.value)
			assert.Equal(t, tc.want.record, got.record)
			assert.True(t, tc.want.at.Equal(got.at), "%s", got.at)
			assert.LessOrEqual(t, len(got.record), 64, "the CRD's bound")
		})
	}
	assert.True(t, refreshRequested(release("", ""), release("a", "")))
	assert.False(t, refreshRequested(release("a", ""), release("a", "x")), "a status write is no request")
	assert.False(t, refreshRequested(release("a", ""), release("", "")))
}
