package drift

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// A report carries each object's contested fields from the Release's
// status.selfHeal, without touching the compare's objects (the cache's).
func TestWithContested(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	objects := []subresourcesv1alpha1.ObjectDiff{
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectModified},
		{Kind: "ConfigMap", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectInSync},
	}
	status := &convoyv1alpha1.SelfHealStatus{Contested: []convoyv1alpha1.ContestedField{
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: since},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Path: "spec.paused", Manager: "kubectl", Heals: 4, Since: since},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "gone", Path: "spec.replicas", Manager: "hpa", Heals: 3, Since: since},
	}}

	got := withContested(objects, status)
	assert.Equal(t, []subresourcesv1alpha1.ContestedField{
		{Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: since},
		{Path: "spec.paused", Manager: "kubectl", Heals: 4, Since: since},
	}, got[0].Contested)
	assert.Empty(t, got[1].Contested, "the ConfigMap of the same name is another object")
	assert.Len(t, got, 2, "an object the render no longer has is not listed")
	assert.Empty(t, objects[0].Contested, "the compare's objects are left as they were")

	assert.Equal(t, objects, withContested(objects, nil))
}
