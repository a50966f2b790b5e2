package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// FuzzManifests: any text in a source ConfigMap's key gives objects or a
// *failure.Error with a reason and a message, never a panic; each object it
// gives has an apiVersion, a kind and a name, and they make a render unless
// two of them are the same object.
func FuzzManifests(f *testing.F) {
	for _, seed := range []string{
		manyConfigMaps(2),
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- 3\n",
		"a: &a [*a, *a]\nb: &b [*a, *a]\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"s\"}}",
		"---\n---\n", "apiVersion: v1\nkind: ConfigMap\n", ":\n\t- x",
		"\x00\x00\x00\x00", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n\x00",
		"apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a}\n- {kind: List, items: [{metadata: {name: b}}]}\n",
		"{\"kind\": \"List\"}\n---\ndata:\n  t: |+\n    x\n\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		objs, err := renderManifests([]source.File{{Name: "a.yaml", Where: "ConfigMap demo/src key a.yaml", Data: []byte(text)}})
		if err != nil {
			if err.Reason == "" || err.Message == "" {
				t.Fatalf("an error without reason or message: %#v", err)
			}
			return
		}
		for _, o := range objs {
			require.NoError(t, manifest.Validate(o))
		}
		if _, err := New(objs); err != nil {
			require.Equal(t, ReasonManifestInvalid, failure.ReasonOf(err))
			require.Contains(t, err.Error(), "duplicate object")
		}
	})
}

// FuzzMutations: any patch, JSON patch or labels on an object give a valid
// object (an apiVersion, a kind and a name, which encodes to JSON) or a
// *failure.Error of reason MutationFailed, never a panic.
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
		check := func(m convoyv1alpha1.Mutation) {
			objs := obj()
			if err := mutate(0, m, objs); err != nil {
				require.Equal(t, ReasonMutationFailed, err.Reason)
				require.NotEmpty(t, err.Message)
				return
			}
			require.NoError(t, manifest.Validate(objs[0]), "%+v", m)
			_, err := json.Marshal(objs[0].Object)
			require.NoError(t, err)
		}
		if json.Valid([]byte(patch)) {
			check(convoyv1alpha1.Mutation{Patch: rawExt(patch)})
		}
		var ops []convoyv1alpha1.JSONPatchOperation
		if json.Unmarshal([]byte(jsonPatch), &ops) == nil {
			check(convoyv1alpha1.Mutation{JSONPatch: ops})
		}
		check(convoyv1alpha1.Mutation{Labels: map[string]string{key: value}})
		check(convoyv1alpha1.Mutation{Annotations: map[string]string{key: value}})
		check(convoyv1alpha1.Mutation{Labels: map[string]string{key: value}, Annotations: map[string]string{key: value}})
	})
}

// FuzzStoreDecode: any bytes in a render-store Secret give objects or an
// error; never more than the limit of bytes is inflated, never more objects
// than the limit decoded; a refusal for size or count is right.
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
	f.Add(gz(`[` + strings.Repeat(`{"a":1},`, 20) + `{}]`))
	f.Add(gz(`[{"a":"` + strings.Repeat("x", 5000) + `"}]`))
	limits := Limits{MaxBytes: 4096, MaxObjects: 8}
	f.Fuzz(func(t *testing.T, data []byte) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			_, err := decode(data, limits)
			require.Error(t, err, "not gzip")
			return
		}
		inflated := &countingReader{r: zr}
		objs, err := decodeInflating(inflated, limits)
		require.LessOrEqual(t, inflated.n, int64(limits.MaxBytes)+1, "inflated past the limit")
		require.LessOrEqual(t, len(objs), limits.MaxObjects)
		switch failure.ReasonOf(err) {
		case ReasonStoredRenderTooLarge:
			require.Greater(t, inflated.n, int64(limits.MaxBytes))
		case ReasonTooManyObjects:
			require.Nil(t, objs)
		}
		if err == nil {
			_, _ = New(objs)
		}
	})
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func rawExt(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
