package health

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ClusterReader is the Reader of a Release: the cluster.Reader of its target
// cluster, as its identity. It gets the Release's Access one way, on first
// use (target: a pass that reads nothing gets no Access), and every method
// goes through it. It is used by one pass at a time.
type ClusterReader struct {
	targets cluster.Targets
	release *convoyv1alpha1.Release
	lists   bool

	// access is the Release's Access and reader its Reader, once had; err
	// is why the Access could not be had.
	access *cluster.Access
	reader *cluster.Reader
	err    error
}

var _ Reader = &ClusterReader{}

// NewClusterReader returns the Reader of release. With lists, it tells the
// resourceVersions of objects from the target's shared LISTs; without, its
// ResourceVersion cannot tell and the pass reads.
func NewClusterReader(targets cluster.Targets, release *convoyv1alpha1.Release, lists bool) *ClusterReader {
	return &ClusterReader{targets: targets, release: release, lists: lists}
}

// target gets the Release's Access once, and its Reader. A failure concerns
// the whole Release: it is a *failure.Error of reason ReasonCannotAssess.
func (r *ClusterReader) target(ctx context.Context) (*cluster.Access, *cluster.Reader, error) {
	if r.access == nil && r.err == nil {
		access, err := r.targets.ForRelease(ctx, r.release)
		if err != nil {
			r.err = &failure.Error{Reason: ReasonCannotAssess, Message: err.Error(), Err: err}
		} else {
			r.access, r.reader = access, access.Reader(r.lists)
		}
	}
	return r.access, r.reader, r.err
}

// Resource implements Reader with the target's REST mapper.
func (r *ClusterReader) Resource(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	_, reader, err := r.target(ctx)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	mapping, err := reader.Mapping(gvk)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("%s is not known to the cluster: %w", gvk, err)
	}
	return mapping.Resource, nil
}

// Get implements Reader with a GET as the Release's identity. A refusal
// names who was refused, the verb and the object.
func (r *ClusterReader) Get(ctx context.Context, entry convoyv1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	access, reader, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	obj, err := reader.Get(ctx, gvkOfEntry(entry), entry.Namespace, entry.Name)
	if f, ok := cluster.ImpersonationRefused(err, access.Identity); ok {
		// No object of the Release can be read: the whole Release.
		return nil, &failure.Error{Reason: ReasonCannotAssess, Message: f.Message, Err: f}
	}
	if err != nil {
		return nil, readError(reader.Who(), entry, err)
	}
	return obj, nil
}

// ResourceVersion implements Reader with the target's shared LISTs.
func (r *ClusterReader) ResourceVersion(ctx context.Context, entry convoyv1alpha1.InventoryEntry) (string, bool, bool) {
	_, reader, err := r.target(ctx)
	if err != nil {
		return "", false, false
	}
	return reader.ResourceVersion(ctx, gvkOfEntry(entry), entry.Namespace, entry.Name)
}

// Scope implements Reader: whom and where the objects are read as.
func (r *ClusterReader) Scope(ctx context.Context) string {
	_, reader, err := r.target(ctx)
	if err != nil {
		return ""
	}
	return reader.Who() + "@" + reader.ClusterName()
}

// gvkOfEntry is the group, version and kind of an inventory entry.
func gvkOfEntry(entry convoyv1alpha1.InventoryEntry) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: entry.Group, Version: entry.Version, Kind: entry.Kind}
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
