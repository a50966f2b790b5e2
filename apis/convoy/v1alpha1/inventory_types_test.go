package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Objects are named one way in every message: ObjectKey.Describe.
func TestObjectKeyOfDescribe(t *testing.T) {
	object := func(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(namespace)
		u.SetName(name)
		return u
	}
	tests := []struct {
		obj  *unstructured.Unstructured
		want string
	}{
		{object("apps/v1", "Deployment", "shop", "web"), "Deployment.apps shop/web"},
		{object("v1", "ConfigMap", "shop", "x"), "ConfigMap shop/x"},
		{object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "view"), "ClusterRole.rbac.authorization.k8s.io view"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ObjectKeyOf(tt.obj).Describe())
	}
}
