package desired

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// BenchmarkRenderCacheHit takes the render of a bench-fleet Release (14
// ConfigMaps, 3 Services, 3 Deployments) from the cache.
func BenchmarkRenderCacheHit(b *testing.B) {
	var objs []*unstructured.Unstructured
	i := 1234
	for j := 0; j < 14; j++ {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("r%d-cm%d", i, j), "namespace": "fleet"}, "data": map[string]any{"release": strconv.Itoa(i), "index": strconv.Itoa(j), "color": "blue"}}})
	}
	for j := 0; j < 3; j++ {
		app := fmt.Sprintf("r%d-app%d", i, j)
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": app, "namespace": "fleet"}, "spec": map[string]any{"selector": map[string]any{"app": app}, "ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http"}}}}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": app, "namespace": "fleet", "labels": map[string]any{"app": app}}, "spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": app}}, "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": app}}, "spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/app:1.1234", "ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}}}}}}}}})
	}
	c := NewRenderCache(DefaultRenderCacheBytes, time.Hour, clocktesting.NewFakeClock(time.Now()))
	c.put("k", &render.Render{Objects: objs})
	b.ReportMetric(float64(c.entries.Size()), "kept-bytes")
	for b.Loop() {
		if _, ok := c.get("k"); !ok {
			b.Fatal("miss")
		}
	}
}
