package compare

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deployment is a desired Deployment with containers app (image) and proxy.
func deployment(ns, name string, replicas int64, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": name}},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{
					map[string]any{
						"name": "app", "image": image,
						"ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}},
						"env": []any{
							map[string]any{"name": "LOG_LEVEL", "value": "info"},
							map[string]any{"name": "PORT", "value": "8080"},
						},
					},
					map[string]any{"name": "proxy", "image": "envoy:1.30", "args": []any{"--config", "/etc/envoy.yaml"}},
				}},
			},
		},
	}}
}

// liveOf returns what the cluster holds for desired: the same object with
// the server's fields, a status, and a label of another field manager.
func liveOf(desired *unstructured.Unstructured) *unstructured.Unstructured {
	live := desired.DeepCopy()
	md := live.Object["metadata"].(map[string]any)
	md["resourceVersion"] = "41"
	md["uid"] = "6c1e3a3e-" + desired.GetName()
	md["generation"] = int64(3)
	md["creationTimestamp"] = "2026-01-01T00:00:00Z"
	md["managedFields"] = []any{map[string]any{"manager": "convoy", "operation": "Apply"}}
	if labels, ok := md["labels"].(map[string]any); ok {
		labels["owned-by-someone-else"] = "yes"
	} else {
		md["labels"] = map[string]any{"owned-by-someone-else": "yes"}
	}
	live.Object["status"] = map[string]any{"observedGeneration": int64(3), "replicas": int64(2)}
	return live
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     data,
	}}
}

func clusterRole(name string, verbs ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": name},
		"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": verbs}},
	}}
}

func secret(ns, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     data,
	}}
}

func configMaps(n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, n)
	for i := range out {
		out[i] = configMap("shop", fmt.Sprintf("cm-%03d", i), map[string]any{"k": "v"})
	}
	return out
}
