package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func secret(data, stringData map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "annotations": map[string]any{
			lastAppliedAnnotation: `{"data":{"password":"aHVudGVyMg=="}}`,
			"team":                "payments",
		}},
	}
	if data != nil {
		obj["data"] = data
	}
	if stringData != nil {
		obj["stringData"] = stringData
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestObject(t *testing.T) {
	r := NewWithKey([]byte("k"))
	in := secret(map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}, map[string]any{"token": "hunter2"})
	out := r.Object(in)

	text := strings.Join([]string{
		out.Object["data"].(map[string]any)["password"].(string),
		out.Object["data"].(map[string]any)["user"].(string),
		out.Object["stringData"].(map[string]any)["token"].(string),
		out.GetAnnotations()[lastAppliedAnnotation],
	}, " ")
	for _, leaked := range []string{"aHVudGVyMg==", "hunter2", "YWRtaW4=", "admin"} {
		assert.NotContains(t, text, leaked)
	}
	assert.Equal(t, "payments", out.GetAnnotations()["team"], "other annotations stay")
	assert.Equal(t, "db", out.GetName())

	password := out.Object["data"].(map[string]any)["password"].(string)
	assert.Regexp(t, `^redacted:[0-9a-f]{12}$`, password)
	assert.Equal(t, password, out.Object["stringData"].(map[string]any)["token"],
		"the same value in data (base64) and stringData gives the same marker")
	assert.NotEqual(t, password, out.Object["data"].(map[string]any)["user"])

	assert.Equal(t, "aHVudGVyMg==", in.Object["data"].(map[string]any)["password"], "the input is not modified")
}

func TestMarkers(t *testing.T) {
	a, b := NewWithKey([]byte("one")), NewWithKey([]byte("two"))
	assert.Equal(t, a.Marker([]byte("x")), a.Marker([]byte("x")), "stable within a redactor")
	assert.NotEqual(t, a.Marker([]byte("x")), a.Marker([]byte("y")), "a changed value shows")
	assert.NotEqual(t, a.Marker([]byte("x")), b.Marker([]byte("x")), "keyed: not a plain hash")
	assert.NotEqual(t, New().Marker([]byte("x")), New().Marker([]byte("x")), "random keys")
}

func TestNotASecret(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"},
		"data": map[string]any{"password": "plain"},
	}}
	require.Same(t, cm, NewWithKey(nil).Object(cm))
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"a": "b"}}}
	assert.Same(t, other, NewWithKey(nil).Object(other), "only core/v1 Secrets")
	objs := NewWithKey(nil).Objects([]*unstructured.Unstructured{cm, secret(map[string]any{"a": "Yg=="}, nil)})
	assert.Equal(t, "plain", objs[0].Object["data"].(map[string]any)["password"])
	assert.Regexp(t, `^redacted:`, objs[1].Object["data"].(map[string]any)["a"])
}
