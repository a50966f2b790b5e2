// Package redact keeps Secret values from leaving the server: /preview and
// /diff show each value of a Secret's data and stringData as a marker that
// carries a short keyed hash, so that a changed value still shows as a change
// and an unchanged one does not. URL takes the credentials out of a URL a
// source prints.
package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// markerPrefix starts every redacted value.
const markerPrefix = "redacted:"

// lastAppliedAnnotation is kubectl's copy of the whole object, values included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Redactor replaces Secret values by markers. The hash is an HMAC with a key
// of the Redactor, not a plain hash: a plain short hash of a short password
// can be reversed by trying candidates. Markers are comparable within one
// Redactor (one process), which is all /diff needs.
type Redactor struct {
	key []byte
}

// New returns a Redactor with a random key.
func New() *Redactor {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("redact: reading random key: %v", err))
	}
	return &Redactor{key: key}
}

// NewWithKey returns a Redactor with a fixed key, for tests.
func NewWithKey(key []byte) *Redactor { return &Redactor{key: key} }

// IsSecret reports whether obj is a core/v1 Secret.
func IsSecret(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == "Secret" && obj.GetAPIVersion() == "v1"
}

// Marker returns the marker of a value.
func (r *Redactor) Marker(value []byte) string {
	mac := hmac.New(sha256.New, r.key)
	mac.Write(value)
	return markerPrefix + hex.EncodeToString(mac.Sum(nil))[:12]
}

// Object returns obj with the values of a Secret replaced by markers, and
// obj itself, unchanged, when it is not a Secret. obj is never modified.
// data values are hashed after base64 decoding and stringData values as
// they are, so "a" in data and "a" in stringData give the same marker.
func (r *Redactor) Object(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if !IsSecret(obj) {
		return obj
	}
	out := obj.DeepCopy()
	if data, ok := out.Object["data"].(map[string]any); ok {
		for k, v := range data {
			s, _ := v.(string)
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				raw = []byte(s)
			}
			data[k] = r.Marker(raw)
		}
	}
	if data, ok := out.Object["stringData"].(map[string]any); ok {
		for k, v := range data {
			s, _ := v.(string)
			data[k] = r.Marker([]byte(s))
		}
	}
	if annotations := out.GetAnnotations(); annotations != nil {
		if v, ok := annotations[lastAppliedAnnotation]; ok {
			annotations[lastAppliedAnnotation] = r.Marker([]byte(v))
			out.SetAnnotations(annotations)
		}
	}
	return out
}

// Objects returns Object of each of objects.
func (r *Redactor) Objects(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objects))
	for i, o := range objects {
		out[i] = r.Object(o)
	}
	return out
}
