package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMapperRefreshesOnceOnUnknownKind(t *testing.T) {
	disc := kubefake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	disc.Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}},
	}}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	m := NewMapper(disc, clk, time.Minute)
	isNamespaced := func(gvk schema.GroupVersionKind) (bool, error) {
		mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return false, err
		}
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}

	namespaced, err := isNamespaced(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	require.NoError(t, err)
	assert.True(t, namespaced)

	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	_, err = isNamespaced(widget)
	require.True(t, meta.IsNoMatchError(err), "unknown kind: %v", err)

	// The CRD is installed: the first lookup since the last refresh already
	// happened, so within the interval the cache is not refreshed again.
	disc.Resources = append(disc.Resources, &metav1.APIResourceList{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: false}},
	})
	_, err = isNamespaced(widget)
	require.True(t, meta.IsNoMatchError(err), "no refresh within the interval: %v", err)

	clk.SetTime(clk.Now().Add(2 * time.Minute))
	namespaced, err = isNamespaced(widget)
	require.NoError(t, err, "refreshed after the interval")
	assert.False(t, namespaced)
}
