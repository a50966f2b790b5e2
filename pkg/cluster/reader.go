package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// Reader reads the live objects of a Release's target cluster as the
// Release's identity: the compare (it is the engine's compare.Cluster) and
// the health pass share it. It maps
// kinds with the target's REST mapper; when built with shared LISTs, it
// tells the resourceVersion of an object from a metadata-only LIST
// (Snapshots) without reading it; after ReadAhead, it answers reads from
// the LISTs of whole objects it made. A Reader serves one pass; it is safe
// for concurrent use once ReadAhead returned.
type Reader struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	cluster string
	who     string
	// snapshots is nil when the Reader reads every object.
	snapshots *Snapshots
	// collections remembers the sizes of the collections read ahead; nil:
	// none is remembered.
	collections *Collections
	// ahead is what ReadAhead read; nil before.
	ahead *readAhead
	// costs records what the reads take and prices the read-aheads; nil:
	// FullListCostRatio.
	costs *Costs
	clock clock.PassiveClock
}

// Reader returns the Reader of a's target cluster. With lists, its
// ResourceVersion answers from the target's shared metadata-only LISTs;
// without, it cannot tell (known is false) and callers read.
func (a *Access) Reader(lists bool) *Reader {
	r := &Reader{dynamic: a.Target.Dynamic, mapper: a.Target.Mapper, cluster: a.Target.Name, who: a.Who(), collections: a.Target.Collections,
		costs: a.Target.Costs, clock: clock.RealClock{}}
	if lists {
		r.snapshots = a.Target.Snapshots
	}
	return r
}

// NewReader returns a Reader of the local cluster over dyn and mapper, as
// who, without shared LISTs: for tools and tests that have their own
// clients (convoy-apiserver gets its Readers from an Access).
func NewReader(dyn dynamic.Interface, mapper meta.RESTMapper, who string) *Reader {
	return &Reader{dynamic: dyn, mapper: mapper, who: who, clock: clock.RealClock{}}
}

// Who names whom the requests are made as, for the message of a refusal:
// "ServiceAccount NS/NAME", or "the kubeconfig of Cluster NS/NAME".
func (r *Reader) Who() string { return r.who }

// ClusterName names the cluster: "" for the local one, else "NS/NAME" of its
// Cluster.
func (r *Reader) ClusterName() string { return r.cluster }

// Mapping returns the REST mapping of gvk on the cluster. A kind the cluster
// does not serve gives the mapper's error, for which meta.IsNoMatchError is
// true.
func (r *Reader) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	return r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// resource returns the dynamic client of gvk in namespace; cluster-scoped
// kinds ignore the namespace. The mapper's errors are returned as they are.
func (r *Reader) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	mapping, err := r.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return r.dynamic.Resource(mapping.Resource), nil
	}
	if namespace == "" {
		return nil, fmt.Errorf("%s is namespaced but the object has no namespace", mapping.Resource.GroupResource())
	}
	return r.dynamic.Resource(mapping.Resource).Namespace(namespace), nil
}

// Get reads the live object; a missing object returns an error for which
// apierrors.IsNotFound is true.
func (r *Reader) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if r.ahead != nil {
		if mapping, err := r.Mapping(gvk); err == nil {
			key := snapshotKey{resource: mapping.Resource}
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				key.namespace = namespace
			}
			if obj, err, ok := r.ahead.get(key, name); ok {
				return obj, err
			}
		}
	}
	ri, err := r.resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	began := r.clock.Now()
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		// What a GET costs: one that failed otherwise (refused, timed
		// out) tells nothing of it.
		r.costs.ObserveGet(r.clock.Since(began))
	}
	return obj, err
}

// DryRunApply sends obj as a server-side apply with dryRun=All, force, and
// the field manager of convoy's controller, so that it is the very request
// the controller's apply would be, and returns what the apply would give.
// It writes nothing. obj is not modified.
func (r *Reader) DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := r.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	return ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
		FieldManager: convoyv1alpha1.FieldManagerController,
		Force:        true,
		DryRun:       []string{metav1.DryRunAll},
	})
}

// ResourceVersion tells the resourceVersion of the live object from a shared
// metadata-only LIST, and whether it exists, without reading it. known is
// false when it cannot tell (no shared LISTs, an unknown kind, a LIST that
// is not worth it or failed): the caller reads the object.
func (r *Reader) ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (rv string, exists, known bool) {
	if r.snapshots == nil {
		return "", false, false
	}
	mapping, err := r.Mapping(gvk)
	if err != nil {
		return "", false, false
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	snap, err := r.snapshots.Get(ctx, mapping.Resource, namespace)
	if err != nil {
		return "", false, false
	}
	rv, exists = snap.ResourceVersion(name)
	return rv, exists, true
}
