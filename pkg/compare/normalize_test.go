package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{
			name: "the six fields go, the rest stays",
			in: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{
					"name": "web", "namespace": "shop",
					"labels":            map[string]any{"app": "web"},
					"annotations":       map[string]any{"a": "b"},
					"resourceVersion":   "42",
					"uid":               "0b1c",
					"generation":        int64(7),
					"creationTimestamp": "2026-01-02T03:04:05Z",
					"managedFields":     []any{map[string]any{"manager": "convoy"}},
					"finalizers":        []any{"x"},
					"ownerReferences":   []any{map[string]any{"name": "o"}},
				},
				"spec":   map[string]any{"replicas": int64(3), "status": "a spec field named status stays"},
				"status": map[string]any{"readyReplicas": int64(3)},
			},
			want: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{
					"name": "web", "namespace": "shop",
					"labels":          map[string]any{"app": "web"},
					"annotations":     map[string]any{"a": "b"},
					"finalizers":      []any{"x"},
					"ownerReferences": []any{map[string]any{"name": "o"}},
				},
				"spec": map[string]any{"replicas": int64(3), "status": "a spec field named status stays"},
			},
		},
		{
			name: "nothing to clear",
			in:   map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "v"}},
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "v"}},
		},
		{
			name: "no metadata",
			in:   map[string]any{"kind": "X", "status": "s"},
			want: map[string]any{"kind": "X"},
		},
		{
			name: "creationTimestamp null",
			in:   map[string]any{"metadata": map[string]any{"name": "n", "creationTimestamp": nil}},
			want: map[string]any{"metadata": map[string]any{"name": "n"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &unstructured.Unstructured{Object: tt.in}
			before := in.DeepCopy()
			got := normalize(in)
			assert.Equal(t, tt.want, got.Object)
			assert.Equal(t, before.Object, in.Object, "the input is not modified")
		})
	}
}
