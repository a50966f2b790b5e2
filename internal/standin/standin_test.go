package standin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

func object(kind, name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace("shop")
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestWavesAndHooks(t *testing.T) {
	r := &render.Render{Ref: "r1", Objects: []*unstructured.Unstructured{
		object("ConfigMap", "late", map[string]string{AnnotationWave: "2"}),
		object("ConfigMap", "first", nil),
		object("ConfigMap", "negative", map[string]string{AnnotationWave: "-1"}),
		object("ConfigMap", "junk", map[string]string{AnnotationWave: "soon"}),
		object("Job", "migrate", map[string]string{AnnotationHook: "PreSync", AnnotationWave: "7"}),
		object("Job", "smoke", map[string]string{AnnotationHook: "PostSync"}),
		object("Job", "other", map[string]string{AnnotationHook: "Sometime"}),
	}}
	assert.Equal(t, []int32{-1, 0, 2}, waves(r), "hooks make no wave; a wave that is not an integer is 0")
	assert.Equal(t, []string{"first", "junk", "other"}, names(objectsOf(r, 0, "")))
	assert.Equal(t, []string{"late"}, names(objectsOf(r, 2, "")))
	assert.Equal(t, []string{"migrate"}, names(objectsOf(r, 0, convoyv1alpha1.HookPreSync)))
	assert.Equal(t, []string{"smoke"}, names(objectsOf(r, 0, convoyv1alpha1.HookPostSync)))

	e := Entry(r.Objects[4], "r1")
	assert.Equal(t, convoyv1alpha1.InventoryEntry{
		ObjectKey: convoyv1alpha1.ObjectKey{Kind: "Job", Namespace: "shop", Name: "migrate"}, Version: "v1", Wave: 7, RenderRef: "r1",
		Hook: &convoyv1alpha1.Hook{Phase: convoyv1alpha1.HookPreSync, RunAfter: convoyv1alpha1.HookRunAfterApplied},
	}, e)
	assert.Nil(t, Entry(r.Objects[6], "r1").Hook, "an unknown hook phase is no hook")
}

func TestMergeEntries(t *testing.T) {
	entry := func(name, ref string) convoyv1alpha1.InventoryEntry {
		return convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: name}, Version: "v1", RenderRef: ref}
	}
	prev := []convoyv1alpha1.InventoryEntry{entry("a", "old"), entry("gone", "old"), entry("b", "old")}
	next := []convoyv1alpha1.InventoryEntry{entry("a", "new"), entry("c", "new")}
	assert.Equal(t, []convoyv1alpha1.InventoryEntry{entry("gone", "old"), entry("b", "old"), entry("a", "new"), entry("c", "new")},
		MergeEntries(prev, next), "not pruned: the entries of the previous render stay until applied anew")
	assert.Equal(t, next, MergeEntries(nil, next))
}
