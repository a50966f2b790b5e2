package source

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
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
		{"digest", sourcefailure.ReasonDigestMismatch, convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "tampered", CertSecretRef: ca}, true},
		{"credentials in the URL", sourcefailure.ReasonSourceInvalid, convoyv1alpha1.HelmRepositorySource{URL: "https://user:pw@" + strings.TrimPrefix(repo.URL, "https://"), Chart: "meta"}, true},
		{"not found", sourcefailure.ReasonArtifactNotFound, convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "none", CertSecretRef: ca}, false},
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
	before := refusalCount(t, sourcefailure.ReasonSourceInvalid)
	_, err := f.Resolve(t.Context(), helmRelease(convoyv1alpha1.HelmRepositorySource{URL: "https://user:pw@charts.example", Chart: "web"}), inputs)
	require.Error(t, err)
	assert.Equal(t, before+1, refusalCount(t, sourcefailure.ReasonSourceInvalid), "Resolve counts too")
}

// counter is the value of a counter series.
func counter(t *testing.T, c metrics.CounterMetric) float64 {
	t.Helper()
	RegisterMetrics()
	agecache.RegisterMetrics()
	v, err := testutil.GetCounterMetricValue(c)
	require.NoError(t, err)
	return v
}

// Fetches and resolves are counted by kind and outcome; the lookups of the
// content and resolve caches that decide whether to go to the network are
// counted once each.
func TestFetchesAndCachesCounted(t *testing.T) {
	repo := startRepository(t, "", "")
	chart := []byte("chart")
	repo.files["web.tgz"] = chart
	repo.files["t.tgz"] = []byte("not the chart")
	repo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0, urls: [web.tgz], digest: %s}\n  tampered:\n  - {version: 1.0.0, urls: [t.tgz], digest: %s}\n",
		strings.TrimPrefix(sha256Hex(chart), "sha256:"), strings.TrimPrefix(sha256Hex(chart), "sha256:"))
	inputs := inputsOf(caSecret("ca", repo.Server))
	ca := &convoyv1alpha1.LocalObjectReference{Name: "ca"}
	f, _ := newFetcher(t)

	type counts struct{ success, failure, refusal, resolved, sourceHit, sourceMiss, resolveHit, resolveMiss float64 }
	read := func() counts {
		return counts{
			success: counter(t, fetches.WithLabelValues("helmRepository", "success")), failure: counter(t, fetches.WithLabelValues("helmRepository", "failure")),
			refusal: counter(t, fetches.WithLabelValues("helmRepository", "refusal")), resolved: counter(t, resolves.WithLabelValues("helmRepository", "success")),
			sourceHit: counter(t, agecache.Lookups(agecache.CacheSource, "hit")), sourceMiss: counter(t, agecache.Lookups(agecache.CacheSource, "miss")),
			resolveHit: counter(t, agecache.Lookups(agecache.CacheResolve, "hit")), resolveMiss: counter(t, agecache.Lookups(agecache.CacheResolve, "miss")),
		}
	}
	before := read()
	web := helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web", CertSecretRef: ca})
	_, err := f.Fetch(t.Context(), web, inputs)
	require.NoError(t, err)
	_, err = f.Fetch(t.Context(), web, inputs)
	require.NoError(t, err)
	_, err = f.Resolve(t.Context(), web, inputs)
	require.NoError(t, err)
	fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "none", CertSecretRef: ca}), inputs, sourcefailure.ReasonArtifactNotFound)
	fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "tampered", CertSecretRef: ca}), inputs, sourcefailure.ReasonDigestMismatch)
	after := read()

	assert.Equal(t, 2.0, after.success-before.success)
	assert.Equal(t, 1.0, after.failure-before.failure, "a chart not in the index is the far end's failure")
	assert.Equal(t, 1.0, after.refusal-before.refusal, "a digest mismatch is refused")
	assert.Equal(t, 1.0, after.resolved-before.resolved)
	// The index: fetched once (a miss), then served from the cache by the
	// second fetch, the resolve and the two failing fetches.
	assert.Equal(t, 1.0, after.resolveMiss-before.resolveMiss)
	assert.Equal(t, 4.0, after.resolveHit-before.resolveHit)
	// The chart: downloaded by the first fetch, from the cache for the
	// second; the tampered one missed (and was not kept).
	assert.Equal(t, 1.0, after.sourceHit-before.sourceHit)
	assert.Equal(t, 2.0, after.sourceMiss-before.sourceMiss)
}

// The refusals that start at 0 are refusals.
func TestRefusalReasonsAreRefusals(t *testing.T) {
	for _, reason := range refusalReasons {
		assert.True(t, failure.IsRefusal(reason), reason)
	}
}
