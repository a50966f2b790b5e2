package cluster

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	deploymentGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	clusterRoleGVK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	clusterRoleGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

func newReader(objs ...runtime.Object) (*Reader, *dynamicfake.FakeDynamicClient) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(deploymentGVK, meta.RESTScopeNamespace)
	mapper.Add(clusterRoleGVK, meta.RESTScopeRoot)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		deploymentsGVR: "DeploymentList",
		clusterRoleGVR: "ClusterRoleList",
	}, objs...)
	return NewReader(dyn, mapper, "ServiceAccount shop/deployer"), dyn
}

func TestReaderGet(t *testing.T) {
	web := liveOf(deployment("shop", "web", 3, "shop:1"))
	reader := liveOf(clusterRole("reader", "get"))
	c, dyn := newReader(web, reader)
	ctx := context.Background()

	got, err := c.Get(ctx, deploymentGVK, "shop", "web")
	require.NoError(t, err)
	assert.Equal(t, web.Object, got.Object)

	got, err = c.Get(ctx, clusterRoleGVK, "ignored", "reader")
	require.NoError(t, err, "cluster-scoped kinds ignore the namespace")
	assert.Equal(t, "reader", got.GetName())

	_, err = c.Get(ctx, deploymentGVK, "shop", "absent")
	assert.True(t, apierrors.IsNotFound(err))

	_, err = c.Get(ctx, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "shop", "w")
	assert.True(t, meta.IsNoMatchError(err), "an unknown kind keeps the mapper's error: %v", err)

	_, err = c.Get(ctx, deploymentGVK, "", "web")
	assert.ErrorContains(t, err, "namespaced")

	var gets []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "get" {
			gets = append(gets, a.GetNamespace()+"/"+a.GetResource().Resource)
		}
	}
	assert.Equal(t, []string{"shop/deployments", "/clusterroles", "shop/deployments"}, gets)
}

func TestReaderDryRunApply(t *testing.T) {
	c, dyn := newReader()
	var seen []clienttesting.PatchActionImpl
	dyn.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchActionImpl)
		seen = append(seen, p)
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(p.GetPatch(), &obj.Object); err != nil {
			return true, nil, err
		}
		obj.SetResourceVersion("7")
		return true, obj, nil
	})
	desired := deployment("shop", "web", 3, "shop:1")
	before := desired.DeepCopy()

	got, err := c.DryRunApply(context.Background(), desired)
	require.NoError(t, err)
	assert.Equal(t, "7", got.GetResourceVersion())
	assert.Equal(t, before, desired, "the desired object is not modified")

	_, err = c.DryRunApply(context.Background(), clusterRole("reader", "get"))
	require.NoError(t, err)

	require.Len(t, seen, 2)
	p := seen[0]
	assert.Equal(t, types.ApplyPatchType, p.GetPatchType())
	assert.Equal(t, "shop", p.GetNamespace())
	assert.Equal(t, "web", p.GetName())
	assert.Equal(t, deploymentsGVR, p.GetResource())
	assert.Equal(t, []string{metav1.DryRunAll}, p.PatchOptions.DryRun)
	assert.Equal(t, "convoy", p.PatchOptions.FieldManager)
	require.NotNil(t, p.PatchOptions.Force)
	assert.True(t, *p.PatchOptions.Force)
	var body map[string]any
	require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
	assert.Equal(t, runtime.DeepCopyJSONValue(desired.Object), runtime.DeepCopyJSONValue(normalizeNumbers(body)))

	assert.Equal(t, "", seen[1].GetNamespace(), "cluster-scoped")
	assert.Equal(t, clusterRoleGVR, seen[1].GetResource())
}

// normalizeNumbers turns the float64s of encoding/json into int64s.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	case float64:
		return int64(x)
	}
	return v
}

func deployment(ns, name string, replicas int64, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}},
		},
	}}
}

func clusterRole(name string, verbs ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": name},
		"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": verbs}},
	}}
}

// liveOf is desired as the API server returns it.
func liveOf(desired *unstructured.Unstructured) *unstructured.Unstructured {
	live := desired.DeepCopy()
	live.SetResourceVersion("41")
	live.Object["status"] = map[string]any{"observedGeneration": int64(3)}
	return live
}
