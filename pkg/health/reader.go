package health

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// ClusterReader is the Reader of a Release: it reads its target cluster as
// its identity, with the Access it gets on first use (a pass that reads
// nothing gets none). It is used by one pass at a time.
type ClusterReader struct {
	targets cluster.Targets
	release *convoyv1alpha1.Release

	access *cluster.Access
	err    error
}

var _ Lister = &ClusterReader{}

// NewClusterReader returns the Reader of release.
func NewClusterReader(targets cluster.Targets, release *convoyv1alpha1.Release) *ClusterReader {
	return &ClusterReader{targets: targets, release: release}
}

// target gets the Release's Access once; a failure is a CannotAssessError.
func (r *ClusterReader) target(ctx context.Context) (*cluster.Access, error) {
	if r.access == nil && r.err == nil {
		if r.access, r.err = r.targets.ForRelease(ctx, r.release); r.err != nil {
			r.err = &CannotAssessError{Err: r.err}
		}
	}
	return r.access, r.err
}

// Resource implements Reader with the target's REST mapper.
func (r *ClusterReader) Resource(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	access, err := r.target(ctx)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return r.resourceOf(access.Target.Mapper, gvk)
}

// resourceOf maps gvk with mapper.
func (r *ClusterReader) resourceOf(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("%s is not known to the cluster: %w", gvk, err)
	}
	return mapping.Resource, nil
}

// Get implements Reader with a GET as the Release's identity. A refusal
// names who was refused, the verb and the object.
func (r *ClusterReader) Get(ctx context.Context, resource schema.GroupVersionResource, entry convoyv1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	access, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	obj, err := access.Target.Dynamic.Resource(resource).Namespace(entry.Namespace).Get(ctx, entry.Name, metav1.GetOptions{})
	if err != nil {
		return nil, readError(access.Who(), entry, err)
	}
	return obj, nil
}

// Scope implements Lister: whom and where the objects are read as.
func (r *ClusterReader) Scope() string {
	if r.access == nil {
		return ""
	}
	return r.access.Who() + "@" + r.access.Target.Name
}

// ResourceVersion implements Lister with the target's Snapshots.
func (r *ClusterReader) ResourceVersion(ctx context.Context, resource schema.GroupVersionResource, entry convoyv1alpha1.InventoryEntry) (string, bool, bool) {
	access, err := r.target(ctx)
	if err != nil || access.Target.Snapshots == nil {
		return "", false, false
	}
	snap, err := access.Target.Snapshots.Get(ctx, resource, entry.Namespace)
	if err != nil {
		return "", false, false
	}
	rv, exists := snap.ResourceVersion(entry.Name)
	return rv, exists, true
}

// readError says what went wrong reading entry as who.
func readError(who string, entry convoyv1alpha1.InventoryEntry, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s is not on the cluster: %w", entry.Describe(), ErrNotFound)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s may not get %s: %w", who, entry.Describe(), err)
	}
	return err
}
