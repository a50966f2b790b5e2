package cluster

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/testutil"
)

func TestOperation(t *testing.T) {
	cases := []struct {
		method, url, want string
	}{
		{http.MethodGet, "/api", "discovery"},
		{http.MethodGet, "/api/v1", "discovery"},
		{http.MethodGet, "/apis", "discovery"},
		{http.MethodGet, "/apis/apps/v1", "discovery"},
		{http.MethodGet, "/apis/apps/v1/namespaces/shop/deployments/web", "read"},
		{http.MethodGet, "/api/v1/namespaces/shop/configmaps/c", "read"},
		{http.MethodGet, "/api/v1/namespaces/shop", "read"},
		{http.MethodGet, "/api/v1/nodes/n1", "read"},
		{http.MethodGet, "/api/v1/namespaces/shop/configmaps?limit=1000", "list"},
		{http.MethodGet, "/apis/apps/v1/namespaces/shop/deployments", "list"},
		{http.MethodGet, "/apis/rbac.authorization.k8s.io/v1/clusterroles", "list"},
		{http.MethodGet, "/api/v1/namespaces", "list"},
		{http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/web?dryRun=All&fieldManager=convoy&force=true", "dry_run"},
		{http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=convoy", "other"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		assert.NoError(t, err)
		assert.Equal(t, tc.want, operation(&http.Request{Method: tc.method, URL: u}), "%s %s", tc.method, tc.url)
	}
}

// The asks for shared LISTs are counted by how they were answered, and the
// LISTs by how long they took.
func TestSnapshotMetrics(t *testing.T) {
	RegisterMetrics() // unregistered metrics count nothing
	count := func(result string) float64 {
		v, err := testutil.GetCounterMetricValue(snapshotLookups.WithLabelValues(result))
		require.NoError(t, err)
		return v
	}
	listed, shared, oneByOne := count("listed"), count("shared"), count("one_by_one")
	lists, err := testutil.GetHistogramMetricCount(snapshotListSeconds.ObserverMetric)
	require.NoError(t, err)

	s, _, window := countedSnapshots(t, 8*ListCostRatio)
	ctx := context.Background()
	for range 2 { // two asks: not worth a LIST of 8 × ListCostRatio
		_, err := s.Get(ctx, configMaps, "shop")
		require.NoError(t, err)
	}
	window()
	_, err = s.Get(ctx, configMaps, "shop")
	require.ErrorIs(t, err, ErrNotWorthListing)

	assert.Equal(t, listed+1, count("listed"))
	assert.Equal(t, shared+1, count("shared"))
	assert.Equal(t, oneByOne+1, count("one_by_one"))
	after, err := testutil.GetHistogramMetricCount(snapshotListSeconds.ObserverMetric)
	require.NoError(t, err)
	assert.Equal(t, lists+1, after)
}

// refusalCount is convoy_target_refusals_total of reason.
func refusalCount(t *testing.T, reason string) float64 {
	t.Helper()
	RegisterMetrics()
	v, err := testutil.GetCounterMetricValue(targetRefusals.WithLabelValues(reason))
	require.NoError(t, err)
	return v
}
