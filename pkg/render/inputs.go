package render

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// ClientInputs implements Inputs with plain GETs through a clientset. It
// needs get on configmaps and secrets in the Release namespaces.
type ClientInputs struct {
	Client kubernetes.Interface
}

var _ Inputs = ClientInputs{}

// ConfigMap GETs a ConfigMap.
func (c ClientInputs) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return c.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Secret GETs a Secret.
func (c ClientInputs) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return c.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

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
