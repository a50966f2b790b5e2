package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// New sorts objects and computes the renderRef. Renders read from the render
// store go through it too, so a stored render and a fresh one of the same
// objects have the same ref.
//
// Order: by API group, then kind, then namespace, then name, each compared
// as a byte string ("" first: the core group, cluster-scoped objects). The
// version takes no part: two objects with the same group, kind, namespace and
// name are one object on the cluster, and New fails on them with
// ManifestInvalid ("duplicate object ...").
//
// renderRef: the first 16 hex digits of the SHA-256 of the canonical JSON of
// the sorted objects, that is json.Marshal of their []map[string]any
// (encoding/json writes map keys sorted, so equal objects give equal bytes).
//
// New sorts a copy of the slice; the objects are shared, not copied. A nil
// object is ManifestInvalid.
func New(objects []*unstructured.Unstructured) (*Render, error) {
	sorted := slices.Clone(objects)
	for i, u := range sorted {
		if u == nil || u.Object == nil {
			return nil, failure.New(ReasonManifestInvalid, nil, "object %d of the render is empty", i)
		}
	}
	slices.SortStableFunc(sorted, compareObjects)
	for i := 1; i < len(sorted); i++ {
		if compareObjects(sorted[i-1], sorted[i]) == 0 {
			return nil, failure.New(ReasonManifestInvalid, nil, "duplicate object %s: it is in the render twice (as %s and as %s): the same group, kind, namespace and name",
				convoyv1alpha1.ObjectKeyOf(sorted[i]).Describe(), sorted[i-1].GetAPIVersion(), sorted[i].GetAPIVersion())
		}
	}
	ref, size, err := renderRef(sorted)
	if err != nil {
		return nil, failure.New(ReasonManifestInvalid, err, "render does not encode to JSON")
	}
	return &Render{Ref: ref, Objects: sorted, Size: size}, nil
}

// compareObjects orders objects by group, kind, namespace and name.
func compareObjects(a, b *unstructured.Unstructured) int {
	ga, gb := a.GroupVersionKind(), b.GroupVersionKind()
	return cmp.Or(
		cmp.Compare(ga.Group, gb.Group),
		cmp.Compare(ga.Kind, gb.Kind),
		cmp.Compare(a.GetNamespace(), b.GetNamespace()),
		cmp.Compare(a.GetName(), b.GetName()),
	)
}

// renderRef is the first 16 hex digits of the SHA-256 of the canonical JSON
// of sorted objects; it also returns the length of that JSON.
func renderRef(sorted []*unstructured.Unstructured) (string, int, error) {
	maps := make([]map[string]any, len(sorted))
	for i, u := range sorted {
		maps[i] = u.Object
	}
	data, err := json.Marshal(maps)
	if err != nil {
		return "", 0, fmt.Errorf("encode render: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16], len(data), nil
}
