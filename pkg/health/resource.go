package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource returns the plural resource name of gvk, which rules match
// ("deployments" for apps/v1 Deployment), from mapper's REST mapping.
func Resource(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (string, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	return mapping.Resource.Resource, nil
}
