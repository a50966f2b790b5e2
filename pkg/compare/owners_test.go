package compare

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func managed(manager, operation, subresource string, at *metav1.Time, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(operation), Subresource: subresource,
		Time: at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// Each change is owned by the managers of its field (or of what it holds),
// else of its closest owned ancestor; convoy's own manager is never named;
// list items are matched by their keys, values or indexes in the live
// object.
func TestAttribution(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 2, 3, 0, time.UTC))
	entries := []metav1.ManagedFieldsEntry{
		managed("convoy", "Apply", "", &at, `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:paused":{},"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`),
		managed("kubectl", "Update", "scale", nil, `{"f:spec":{"f:replicas":{}}}`),
		managed("intruder", "Apply", "", &at, `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`),
		managed("kubectl-edit", "Update", "", &at, `{"f:metadata":{"f:annotations":{".":{},"f:note":{}},"f:finalizers":{".":{},"v:\"example.com/keep\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"sidecar\"}":{".":{},"f:name":{}}}}}}}`),
		managed("kube-controller-manager", "Update", "status", &at, `{"f:status":{"f:replicas":{}}}`),
		{Manager: "broken", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":`)}},
	}
	live := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"note": "x"},
			"finalizers": []any{"example.com/keep"}},
		"spec": map[string]any{"replicas": int64(5), "paused": true, "minReadySeconds": int64(5), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "evil:1"},
			map[string]any{"name": "sidecar", "image": "proxy:2"},
		}}}},
	}
	desired := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "front"}, "finalizers": []any{"example.com/other"}},
		"spec": map[string]any{"replicas": int64(2), "paused": false, "minReadySeconds": int64(0), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "web:1"},
			map[string]any{"name": "sidecar", "image": "proxy:3"},
		}}}},
	}
	changes := diffChanges(desired, live)
	owners := ownersOf(live, entries)
	got := map[string][]string{}
	for i := range changes {
		owners.attribute(&changes[i])
		c := changes[i]
		if len(c.Owners) == 0 {
			got[c.Path] = []string{"(" + string(c.Unattributed) + ")"}
		}
		for _, o := range c.Owners {
			got[c.Path] = append(got[c.Path], OwnerLabel(o))
		}
	}
	assert.Equal(t, map[string][]string{
		"spec.minReadySeconds":                              {"(" + string(subresourcesv1alpha1.UnattributedUnowned) + ")"}, // nobody owns it
		"metadata.annotations":                              {"kubectl-edit"},                                               // what it holds: note
		"metadata.finalizers[0]":                            {"kubectl-edit"},                                               // by the item's value
		"metadata.labels.tier":                              {"(" + string(subresourcesv1alpha1.UnattributedRemoved) + ")"}, // gone from live
		"spec.paused":                                       {"(" + string(subresourcesv1alpha1.UnattributedNoManager) + ")"},
		"spec.replicas":                                     {"kubectl (scale)"},
		"spec.template.spec.containers[name=app].image":     {"intruder"},
		"spec.template.spec.containers[name=sidecar].image": {"kubectl-edit"}, // the closest owned ancestor: the item
	}, got)
	for _, c := range changes {
		if c.Path == "spec.replicas" {
			require.Len(t, c.Owners, 1)
			assert.Nil(t, c.Owners[0].Time, "written through /scale: time unknown")
			assert.Equal(t, "Update", c.Owners[0].Operation)
		}
		if c.Path == "spec.template.spec.containers[name=app].image" {
			require.Len(t, c.Owners, 1)
			assert.Equal(t, &at, c.Owners[0].Time)
		}
	}
	fc := fieldChanges(changes)
	assert.Equal(t, []string{"kubectl-edit", "unknown", "kubectl (scale)", "intruder"}, changedBy(fc))
	assert.Equal(t, "changed by kubectl-edit at 2026-12-01T10:02:03Z, kubectl (scale) at an unknown time, intruder at 2026-12-01T10:02:03Z, and no other manager than convoy's for the others",
		changedByMessage(fc))
}

// A keyed list item is matched by all of its keys (a port by containerPort
// and protocol), whatever key the compare matched it by.
func TestAttributionMultiKeyItems(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		managed("convoy", "Apply", "", nil, `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}}}}}`),
		managed("editor", "Update", "", nil, `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:targetPort":{}},"k:{\"port\":80,\"protocol\":\"UDP\"}":{"f:targetPort":{}}}}}`),
	}
	live := map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"port": int64(80), "protocol": "TCP", "name": "http", "targetPort": int64(8081)},
	}}}
	desired := map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"port": int64(80), "protocol": "TCP", "name": "http", "targetPort": int64(8080)},
	}}}
	changes := diffChanges(desired, live)
	require.Len(t, changes, 1)
	ownersOf(live, entries).attribute(&changes[0])
	require.Len(t, changes[0].Owners, 1, "%+v", changes[0])
	assert.Equal(t, "editor", changes[0].Owners[0].Manager)
}

func BenchmarkAttribution(b *testing.B) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 2, 3, 0, time.UTC))
	entries := []metav1.ManagedFieldsEntry{
		managed("convoy", "Apply", "", &at, `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{}}}}}}}}}`),
		managed("kubectl", "Update", "scale", nil, `{"f:spec":{"f:replicas":{}}}`),
		managed("kube-controller-manager", "Update", "status", &at, `{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}`),
	}
	live := map[string]any{"spec": map[string]any{"replicas": int64(5), "template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "app", "image": "web:2"}}}}}}
	desired := map[string]any{"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "app", "image": "web:1"}}}}}}
	changes := diffChanges(desired, live)
	b.Run("per-object", func(b *testing.B) {
		for range b.N {
			o := ownersOf(live, entries)
			for i := range changes {
				c := changes[i]
				o.attribute(&c)
			}
		}
	})
	o := ownersOf(live, entries)
	b.Run("per-changed-field", func(b *testing.B) {
		for range b.N {
			c := changes[0]
			o.attribute(&c)
		}
	})
}
