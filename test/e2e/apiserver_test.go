//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDiscoveryListsSubresources(t *testing.T) {
	t.Parallel()
	out := mustKubectl(t, "", "", "get", "--raw", subresourcesAPI)
	var list metav1.APIResourceList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, "subresources.convoy.kumodo.io/v1alpha1", list.GroupVersion)

	resources := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		resources[r.Name] = r
	}
	for sub, kind := range map[string]string{"releases/sync": "ReleaseSync", "releases/refresh": "ReleaseRefresh"} {
		require.Contains(t, resources, sub)
		assert.Equal(t, metav1.Verbs{"create"}, resources[sub].Verbs, sub)
		assert.Equal(t, kind, resources[sub].Kind, sub)
		assert.True(t, resources[sub].Namespaced, sub)
	}

	for sub, kind := range map[string]string{"releases/preview": "ReleasePreview", "releases/diff": "ReleaseDiff", "releases/health": "ReleaseHealth"} {
		require.Contains(t, resources, sub)
		assert.Equal(t, metav1.Verbs{"get"}, resources[sub].Verbs, sub)
		assert.Equal(t, kind, resources[sub].Kind, sub)
	}

	require.Contains(t, resources, "releases", "the stub parent is listed")
	assert.Empty(t, resources["releases"].Verbs, "the stub parent serves no verb")
	assert.Len(t, resources, 6, "releases and its five subresources")
}

func TestAPIServiceAvailable(t *testing.T) {
	t.Parallel()
	out := mustKubectl(t, "", "", "get", "apiservice", "v1alpha1.subresources.convoy.kumodo.io",
		"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	assert.Equal(t, "True", out)
}

func TestCRDsAreNotShadowed(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newRelease(t, ns, "web")

	out := mustKubectl(t, "", "", "get", "releases", "-n", ns, "-o", "name")
	assert.Equal(t, "release.convoy.kumodo.io/web", strings.TrimSpace(out))

	table := mustKubectl(t, "", "", "get", "releases", "-n", ns)
	assert.Regexp(t, `NAME\s+INSYNC\s+HEALTHY\s+RENDER\s+AGE`, table, "printer columns of the CRD")

	explain := mustKubectl(t, "", "", "explain", "release.spec")
	assert.Contains(t, explain, "GROUP:      convoy.kumodo.io")
	for _, field := range []string{"source", "syncPolicy", "healthAssessment", "mutations", "pin"} {
		assert.Contains(t, explain, field)
	}
}

// The aggregator downloads the specs of an APIService in the background
// after it becomes Available, so both are polled for.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/openapi/v3/apis/subresources.convoy.kumodo.io/v1alpha1", "/openapi/v2"} {
		eventually(t, "ReleaseSync in "+path, func(context.Context) error {
			r := kubectl(t, "", "", "get", "--raw", path)
			if r.err != nil {
				return fmt.Errorf("%w: %s", r.err, r.stderr)
			}
			if !strings.Contains(r.stdout, "com.github.kumodo.convoy-apiserver.apis.subresources.v1alpha1.ReleaseSync") {
				return fmt.Errorf("no ReleaseSync model yet")
			}
			return nil
		})
	}
}
