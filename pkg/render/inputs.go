package render

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MapperScoper implements Scoper over a RESTMapper, typically the target
// cluster's. A kind the mapper does not know gives the mapper's error, for
// which meta.IsNoMatchError is true.
type MapperScoper struct {
	Mapper meta.RESTMapper
}

var _ Scoper = MapperScoper{}

// IsNamespaced tells whether gvk is namespaced.
func (m MapperScoper) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := m.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}
