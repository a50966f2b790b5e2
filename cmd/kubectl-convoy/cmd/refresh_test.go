package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// --wait waits for its own request: its value, or a later request's time
// that a pass could have written; never a value left in the future (an
// earlier observer copied any annotation into the status) or an older one.
func TestRefreshHandled(t *testing.T) {
	requested := time.Date(2026, 12, 6, 10, 0, 0, 100000000, time.UTC)
	now := requested.Add(3 * time.Second)
	for _, tc := range []struct {
		name, handled string
		want          bool
	}{
		{name: "its own value", handled: "2026-12-06T10:00:00.100000Z", want: true},
		{name: "nothing handled yet", handled: ""},
		{name: "an older request", handled: "2026-12-06T09:59:59Z"},
		{name: "a later request, handled", handled: "2026-12-06T10:00:02Z", want: true},
		{name: "its own time in another form", handled: "2026-12-06T10:00:00.1Z", want: true},
		{name: "a later request a replica a little ahead recorded", handled: "2026-12-06T10:00:40Z", want: true},
		{name: "far in the future", handled: "9999-12-31T00:00:00Z"},
		{name: "not a time", handled: "now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, refreshHandled(tc.handled, requested, now))
		})
	}
}

// --wait prints what the handling pass resolved the source and the values
// source to; nothing for a values source it did not resolve.
func TestPrintRefreshed(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 1, 0, time.UTC))
	chart := &convoyv1alpha1.LastResolved{Kind: "OCIRepository", URL: "oci://r/web", Tag: "v1", Digest: "sha256:00", Time: at}
	values := &convoyv1alpha1.LastResolved{Kind: "GitRepository", URL: "https://git.example/values", Ref: "refs/heads/main", Commit: strings.Repeat("a", 40), Time: at}
	inSync := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "the live objects match the render"}
	for _, tc := range []struct {
		name   string
		status convoyv1alpha1.ReleaseStatus
		want   string
	}{{
		name:   "no values source",
		status: convoyv1alpha1.ReleaseStatus{LastHandledRefreshAt: "2026-12-06T10:00:00Z", LastResolved: chart, Conditions: []metav1.Condition{inSync}},
		want: "handled: 2026-12-06T10:00:00Z\n" +
			"resolved: oci://r/web:v1 (sha256:00), since 2026-12-06T10:00:01Z\n" +
			"InSync: True (InSync): the live objects match the render\n",
	}, {
		name:   "values from Git",
		status: convoyv1alpha1.ReleaseStatus{LastHandledRefreshAt: "2026-12-06T10:00:00Z", LastResolved: chart, LastResolvedValuesSource: values, Conditions: []metav1.Condition{inSync}},
		want: "handled: 2026-12-06T10:00:00Z\n" +
			"resolved: oci://r/web:v1 (sha256:00), since 2026-12-06T10:00:01Z\n" +
			"values resolved: https://git.example/values refs/heads/main (commit " + strings.Repeat("a", 40) + "), since 2026-12-06T10:00:01Z\n" +
			"InSync: True (InSync): the live objects match the render\n",
	}, {
		name: "terminal escapes",
		status: convoyv1alpha1.ReleaseStatus{LastHandledRefreshAt: "2026-12-06T10:00:00Z",
			LastResolvedValuesSource: &convoyv1alpha1.LastResolved{URL: "https://git.example/values\x1b[2J", Ref: "refs/heads/main\r", Commit: "abc", Time: at},
			Conditions:               []metav1.Condition{{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "Drifted", Message: "changed\x1b[31m"}}},
		want: "handled: 2026-12-06T10:00:00Z\n" +
			"values resolved: https://git.example/values^[[2J refs/heads/main\\r (commit abc), since 2026-12-06T10:00:01Z\n" +
			"InSync: False (Drifted): changed^[[31m\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printRefreshed(&out, &convoyv1alpha1.Release{Status: tc.status}))
			assert.Equal(t, tc.want, out.String())
		})
	}
}
