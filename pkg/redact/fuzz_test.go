package redact

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzRedact: no value of a Secret's data or stringData survives redaction,
// whatever the object around it.
func FuzzRedact(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"Secret","data":{"password":"aHVudGVyMg=="},"stringData":{"token":"abcd"}}`)
	f.Add(`{"apiVersion":"v1","kind":"Secret","data":"notamap","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"cw==\"}}"}}}`)
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}`)
	f.Fuzz(func(t *testing.T, text string) {
		var obj map[string]any
		if json.Unmarshal([]byte(text), &obj) != nil {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		out := New().Object(u)
		if !IsSecret(u) {
			return
		}
		encoded, err := json.Marshal(out.Object)
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"data", "stringData"} {
			values, _ := obj[field].(map[string]any)
			for _, v := range values {
				s, ok := v.(string)
				if !ok || len(s) < 8 {
					continue // short strings occur in any text
				}
				quoted, _ := json.Marshal(s)
				if strings.Contains(string(encoded), string(quoted)) {
					t.Fatalf("value %q of %s survives in %s", s, field, encoded)
				}
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil && len(raw) >= 8 && strings.Contains(string(encoded), string(raw)) {
					t.Fatalf("decoded value of %s survives in %s", field, encoded)
				}
			}
		}
	})
}
