package source

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
)

// refusalCount is convoy_source_refusals_total of reason.
func refusalCount(t *testing.T, reason string) float64 {
	t.Helper()
	RegisterMetrics()
	v, err := testutil.GetCounterMetricValue(refusals.WithLabelValues(reason))
	require.NoError(t, err)
	return v
}

// What convoy-apiserver refuses is counted by reason, in Fetch and Resolve
// alike; what the far end fails is not a refusal.
func TestRefusalsCounted(t *testing.T) {
	repo := startRepository(t, "", "")
	chart := []byte("chart")
	repo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  meta:\n  - {version: 1.0.0, urls: [https://169.254.169.254/x.tgz], digest: %s}\n  tampered:\n  - {version: 1.0.0, urls: [t.tgz], digest: %s}\n",
		strings.TrimPrefix(sha256Hex(chart), "sha256:"), strings.TrimPrefix(sha256Hex(chart), "sha256:"))
	repo.files["t.tgz"] = []byte("not the chart")
	inputs := inputsOf(caSecret("ca", repo.Server))
	ca := &convoyv1alpha1.LocalObjectReference{Name: "ca"}
	f, _ := newFetcher(t)
	for _, tc := range []struct {
		name, reason string
		src          convoyv1alpha1.HelmRepositorySource
		counted      bool
	}{
		{"address", egress.ReasonAddressNotAllowed, convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "meta", CertSecretRef: ca}, true},
		{"digest", ReasonDigestMismatch, convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "tampered", CertSecretRef: ca}, true},
		{"credentials in the URL", ReasonSourceInvalid, convoyv1alpha1.HelmRepositorySource{URL: "https://user:pw@" + strings.TrimPrefix(repo.URL, "https://"), Chart: "meta"}, true},
		{"not found", ReasonArtifactNotFound, convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "none", CertSecretRef: ca}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refusalCount(t, tc.reason)
			fetchErr(t, f, helmRelease(tc.src), inputs, tc.reason)
			want := before
			if tc.counted {
				want++
			}
			assert.Equal(t, want, refusalCount(t, tc.reason))
		})
	}
	before := refusalCount(t, ReasonSourceInvalid)
	_, err := f.Resolve(t.Context(), helmRelease(convoyv1alpha1.HelmRepositorySource{URL: "https://user:pw@charts.example", Chart: "web"}), inputs)
	require.Error(t, err)
	assert.Equal(t, before+1, refusalCount(t, ReasonSourceInvalid), "Resolve counts too")
}
