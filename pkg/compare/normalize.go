package compare

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// normalize returns obj without the fields that the API server sets on its
// own and that say nothing about drift: metadata.resourceVersion, uid,
// generation, creationTimestamp, managedFields, and the whole top-level
// status. Nothing else is removed.
//
// obj is not modified. The result is a shallow copy: it shares every
// subtree other than the top level and metadata with obj, so it must be
// treated as read-only (the redactor copies before it writes).
func normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k == "status" {
			continue
		}
		out[k] = v
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			switch k {
			case "resourceVersion", "uid", "generation", "creationTimestamp", "managedFields":
				continue
			}
			m[k] = v
		}
		out["metadata"] = m
	}
	return &unstructured.Unstructured{Object: out}
}
