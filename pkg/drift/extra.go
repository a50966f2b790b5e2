package drift

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// MaxExtraReads bounds the reads of ExtraObjects: the inventory entries
// beyond it that the render does not contain are not read nor listed.
const MaxExtraReads = 256

// getter reads one live object: all extraObjects needs of the Cluster the
// render was compared on (a missing object is an error with
// apierrors.IsNotFound).
type getter interface {
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
}

// extraObjects returns the entries of an inventory that the compared render
// (objects) does not contain and that still exist on the cluster, read with
// reader, as the Release's identity: the objects the next sync would prune.
// Hooks are left out (the controller does not prune them as extra objects),
// and so are kinds the cluster no longer serves (nothing of them can
// exist). An entry that could not be read is listed with a message.
func extraObjects(ctx context.Context, reader getter, objects []*unstructured.Unstructured, entries []convoyv1alpha1.InventoryEntry) []subresourcesv1alpha1.ExtraObject {
	declared := make(map[convoyv1alpha1.ObjectKey]bool, len(objects))
	for _, obj := range objects {
		declared[convoyv1alpha1.ObjectKeyOf(obj)] = true
	}
	var extra []subresourcesv1alpha1.ExtraObject
	reads := 0
	for _, e := range entries {
		if e.Hook != nil || declared[e.ObjectKey] {
			continue
		}
		if reads == MaxExtraReads {
			break
		}
		reads++
		gvk := schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}
		_, err := reader.Get(ctx, gvk, e.Namespace, e.Name)
		switch {
		case err == nil:
			extra = append(extra, subresourcesv1alpha1.ExtraObject{ObjectKey: e.ObjectKey, Version: e.Version, RenderRef: e.RenderRef})
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		default:
			extra = append(extra, subresourcesv1alpha1.ExtraObject{ObjectKey: e.ObjectKey, Version: e.Version, RenderRef: e.RenderRef,
				Message: truncate.String(fmt.Sprintf("cannot tell whether it exists: %v", err), truncate.InventoryMessage)})
		}
	}
	return extra
}
