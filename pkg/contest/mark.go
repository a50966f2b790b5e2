package contest

import (
	"slices"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// Mark returns objects with the contested fields of each
// (ObjectDiff.Contested), from status: the Release's status.selfHeal as the
// leader's last drift pass wrote it (Decision.Status), so that a check on
// any replica carries the same ones. The slice is copied when a field is
// added: its objects may be the compare cache's.
func Mark(objects []subresourcesv1alpha1.ObjectDiff, status *convoyv1alpha1.SelfHealStatus) []subresourcesv1alpha1.ObjectDiff {
	if status == nil || len(status.Contested) == 0 {
		return objects
	}
	index := make(map[convoyv1alpha1.ObjectKey]int, len(objects))
	for i, o := range objects {
		index[o.Key()] = i
	}
	copied := false
	for _, f := range status.Contested {
		i, ok := index[f.Object()]
		if !ok {
			continue
		}
		if !copied {
			objects, copied = slices.Clone(objects), true
		}
		o := &objects[i]
		o.Contested = append(slices.Clip(o.Contested), subresourcesv1alpha1.ContestedField{
			Path: f.Path, Manager: f.Manager, Subresource: f.Subresource, Heals: f.Heals, Since: f.Since})
	}
	return objects
}
