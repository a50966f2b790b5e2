package health

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

type fakeTargets struct {
	access *cluster.Access
	err    error
	calls  int
}

func (f *fakeTargets) ForRelease(context.Context, *convoyv1alpha1.Release) (*cluster.Access, error) {
	f.calls++
	return f.access, f.err
}

func TestClusterReader(t *testing.T) {
	ctx := context.Background()
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

	t.Run("a cluster that cannot be had concerns the whole Release", func(t *testing.T) {
		targets := &fakeTargets{err: &failure.Error{Reason: cluster.ReasonClusterNotFound, Message: "Cluster.convoy.kumodo.io shop/east not found"}}
		r := NewClusterReader(targets, release, false)
		_, err := r.Resource(ctx, deployments.GroupVersion().WithKind("Deployment"))
		_, whole := cannotAssess(err)
		assert.True(t, whole, "%v", err)
		assert.Equal(t, ReasonCannotAssess, failure.ReasonOf(err))
		_, err = r.Get(ctx, webEntry)
		_, whole = cannotAssess(err)
		assert.True(t, whole, "%v", err)
		assert.ErrorContains(t, err, "Cluster.convoy.kumodo.io shop/east not found")
		assert.Equal(t, 1, targets.calls, "the Access is asked for once per pass")
	})

	t.Run("reads as the identity and names it on a refusal", func(t *testing.T) {
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
		web := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"namespace": "shop", "name": "web"}}}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{deployments: "DeploymentList"}, web)
		dyn.PrependReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
			switch a.(clienttesting.GetAction).GetName() {
			case "secret":
				return true, nil, apierrors.NewForbidden(deployments.GroupResource(), "secret", errors.New("no"))
			case "ungranted":
				return true, nil, apierrors.NewForbidden(deployments.GroupResource(), "ungranted", errors.New(
					`User "system:serviceaccount:convoy-system:convoy-apiserver" cannot impersonate-on:serviceaccount:get resource "deployments" in API group "apps" in the namespace "shop"`))
			}
			return false, nil, nil
		})
		targets := &fakeTargets{access: &cluster.Access{Identity: cluster.Identity{Namespace: "shop", Name: "deployer"},
			Target: &cluster.Target{Dynamic: dyn, Mapper: mapper}}}
		r := NewClusterReader(targets, release, false)
		gvr, err := r.Resource(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		require.NoError(t, err)
		assert.Equal(t, deployments, gvr)
		_, err = r.Resource(ctx, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
		assert.True(t, meta.IsNoMatchError(err), "an unknown kind keeps the mapper's error: %v", err)

		obj, err := r.Get(ctx, webEntry)
		require.NoError(t, err)
		assert.Equal(t, "web", obj.GetName())

		secret := webEntry
		secret.Name = "secret"
		_, err = r.Get(ctx, secret)
		assert.ErrorContains(t, err, "ServiceAccount shop/deployer may not get Deployment.apps shop/secret")
		assert.True(t, apierrors.IsForbidden(err))

		// A namespace that did not grant convoy-apiserver the impersonation
		// of its ServiceAccounts: no object can be read, the whole Release
		// cannot be assessed, and the message says what to bind.
		ungranted := webEntry
		ungranted.Name = "ungranted"
		_, err = r.Get(ctx, ungranted)
		_, whole := cannotAssess(err)
		assert.True(t, whole, "%v", err)
		assert.ErrorContains(t, err, "convoy-apiserver may not act as ServiceAccount shop/deployer: namespace shop has not granted it impersonation")

		gone := webEntry
		gone.Name = "gone"
		_, err = r.Get(ctx, gone)
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorContains(t, err, "Deployment.apps shop/gone is not on the cluster")

		_, _, known := r.ResourceVersion(ctx, webEntry)
		assert.False(t, known, "without shared LISTs it cannot tell")
		assert.Equal(t, "ServiceAccount shop/deployer@", r.Scope(ctx))
		assert.Equal(t, 1, targets.calls, "every method shares the one Access of the pass")
	})

	t.Run("the scope is had as the objects are", func(t *testing.T) {
		targets := &fakeTargets{access: &cluster.Access{Identity: cluster.Identity{Namespace: "shop", Name: "deployer"},
			Target: &cluster.Target{Name: "shop/east", Mapper: meta.NewDefaultRESTMapper(nil)}}}
		r := NewClusterReader(targets, release, true)
		assert.Equal(t, "the kubeconfig of Cluster.convoy.kumodo.io shop/east@shop/east", r.Scope(ctx), "asked first, it gets the Access")
		_, _, known := r.ResourceVersion(ctx, webEntry)
		assert.False(t, known, "an unknown kind: it cannot tell")
		assert.Equal(t, 1, targets.calls)

		failing := &fakeTargets{err: errors.New("no")}
		assert.Empty(t, NewClusterReader(failing, release, true).Scope(ctx), "no Access, no scope")
	})
}
