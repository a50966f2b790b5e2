package source

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// Inputs reads the objects a render needs from the Release's namespace, as
// the Release's identity: the source ConfigMap, the Secrets of secretRef
// and certSecretRef, and the ConfigMaps and Secrets of valuesFrom. A
// missing object returns an error for which apierrors.IsNotFound is true.
type Inputs interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

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

// releaseSecrets reads the Secrets of a Release's namespace with its
// inputs, for pkg/credentials and pkg/verify (credentials.Secrets,
// verify.Fetcher): a missing Secret is the API's NotFound, as it is, which
// each gives its own reason; any other failure is an input's.
type releaseSecrets struct {
	inputs    Inputs
	namespace string
}

func (r releaseSecrets) Secret(ctx context.Context, name, what string) (*corev1.Secret, error) {
	s, err := r.inputs.Secret(ctx, r.namespace, name)
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return s, err
	case apierrors.IsForbidden(err):
		return nil, failure.New(sourcefailure.ReasonInputForbidden, err, "%s may not be read", what)
	}
	return nil, sourcefailure.Unavailable(err, "%s could not be read", what)
}
