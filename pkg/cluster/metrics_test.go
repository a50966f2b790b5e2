package cluster

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
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
