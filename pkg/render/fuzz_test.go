package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// FuzzManifests: any text in a source ConfigMap's key gives objects or an
// *Error, never a panic; the objects it gives make a render.
func FuzzManifests(f *testing.F) {
	for _, seed := range []string{
		manyConfigMaps(2),
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- 3\n",
		"a: &a [*a, *a]\nb: &b [*a, *a]\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"s\"}}",
		"---\n---\n", "apiVersion: v1\nkind: ConfigMap\n", ":\n\t- x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		objs, err := renderManifests(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "src"},
			Data:       map[string]string{"a.yaml": text},
		})
		if err != nil {
			if err.Reason == "" || err.Message == "" {
				t.Fatalf("an error without reason or message: %#v", err)
			}
			return
		}
		_, _ = New(objs)
	})
}

// FuzzMutations: any patch, JSON patch or labels on an object give the
// mutated object or an *Error, never a panic.
func FuzzMutations(f *testing.F) {
	f.Add(`{"spec":{"replicas":3}}`, `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`, "team", "a")
	f.Add(`{"metadata":{"name":null}}`, `[{"op":"remove","path":"/spec"}]`, "", "")
	f.Add(`[]`, `{"op":"test"}`, "a/b/c", "x")
	f.Fuzz(func(t *testing.T, patch, jsonPatch, key, value string) {
		obj := func() []*unstructured.Unstructured {
			return []*unstructured.Unstructured{{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": "demo"},
				"spec":     map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app"}}}}},
			}}}
		}
		if json.Valid([]byte(patch)) {
			_ = mutate(0, convoyv1alpha1.Mutation{Patch: rawExt(patch)}, obj())
		}
		var ops []convoyv1alpha1.JSONPatchOperation
		if json.Unmarshal([]byte(jsonPatch), &ops) == nil {
			_ = mutate(0, convoyv1alpha1.Mutation{JSONPatch: ops}, obj())
		}
		_ = mutate(0, convoyv1alpha1.Mutation{Labels: map[string]string{key: value}, Annotations: map[string]string{key: value}}, obj())
	})
}

// FuzzStoreDecode: any bytes in a render-store Secret give objects or an
// error, and never more than the limit inflated.
func FuzzStoreDecode(f *testing.F) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	f.Add(gz(`[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]`))
	f.Add(gz(`[1, "x", null]`))
	f.Add(gz(`{}`))
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := decode(data, 1<<20)
		if err == nil {
			_, _ = New(objs)
		}
	})
}

func rawExt(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
