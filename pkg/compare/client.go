package compare

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// FieldManager is the field manager of the dry run: the one convoy's
// controller applies with, so the dry run is the same request as the apply.
const FieldManager = "convoy"

// Client is one target cluster as the engine sees it. Implementations must
// be safe for concurrent use and must not modify the objects they are given.
type Client interface {
	// Get reads the live object; a missing object returns an error with
	// apierrors.IsNotFound.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// DryRunApply sends obj as a server-side apply with dryRun=All, field
	// manager "convoy", force=true, and returns the result.
	DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// DynamicClient implements Client over a dynamic client and a REST mapper.
// Cluster-scoped kinds ignore the namespace.
type DynamicClient struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Identity names whom the requests are made as ("ServiceAccount
	// team-a/deployer"), for the message of a refusal and the cache.
	Identity string
	// ClusterName names the cluster ("" for the local one), for the cache.
	ClusterName string
	// Snapshots, when set, tell the resourceVersions of live objects from
	// shared metadata-only LISTs.
	Snapshots *cluster.Snapshots
}

var (
	_ Client     = &DynamicClient{}
	_ Identified = &DynamicClient{}
	_ Located    = &DynamicClient{}
	_ Lister     = &DynamicClient{}
)

// Cluster implements Located.
func (c *DynamicClient) Cluster() string { return c.ClusterName }

// ResourceVersion implements Lister with the Snapshots.
func (c *DynamicClient) ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool, bool) {
	if c.Snapshots == nil {
		return "", false, false
	}
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", false, false
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	snap, err := c.Snapshots.Get(ctx, mapping.Resource, namespace)
	if err != nil {
		return "", false, false
	}
	rv, exists := snap.ResourceVersion(name)
	return rv, exists, true
}

// Identified is a Client that names whom its requests are made as. The
// Engine says so in the message of a refusal (401, 403).
type Identified interface {
	Who() string
}

// Who implements Identified.
func (c *DynamicClient) Who() string { return c.Identity }

// resource returns the dynamic client of gvk in namespace. The mapper's
// errors are returned as they are, so meta.IsNoMatchError still sees them.
func (c *DynamicClient) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(mapping.Resource), nil
	}
	if namespace == "" {
		return nil, fmt.Errorf("%s is namespaced but the object has no namespace", mapping.Resource.GroupResource())
	}
	return c.Dynamic.Resource(mapping.Resource).Namespace(namespace), nil
}

// Get implements Client.
func (c *DynamicClient) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ri, err := c.resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, name, metav1.GetOptions{})
}

// DryRunApply implements Client.
func (c *DynamicClient) DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := c.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	return ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
		FieldManager: FieldManager,
		Force:        true,
		DryRun:       []string{metav1.DryRunAll},
	})
}
