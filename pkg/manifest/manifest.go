// Package manifest parses files of Kubernetes manifests, YAML documents or
// concatenated JSON values, into objects that have an apiVersion, a kind
// and a name, with integers as int64 as unstructured objects need. The
// render of plain manifests and of a chart's CRDs uses it, and so does
// kubectl convoy rules test for the objects it reads.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Error is a file that is not text, or a document of a file that does not
// parse, or holds an object that is not one.
type Error struct {
	// Where names the file.
	Where string
	// Doc is the number of the document in the file, from 1; 0 for the
	// file as a whole.
	Doc int
	Err error
}

func (e *Error) Error() string {
	if e.Doc == 0 {
		return fmt.Sprintf("%s: %v", e.Where, e.Err)
	}
	return fmt.Sprintf("%s document %d: %v", e.Where, e.Doc, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsFile tells whether a ConfigMap key or a file of a source holds
// manifests: its name ends .yaml, .yml or .json.
func IsFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")
}

// ParseFile parses one file of manifests the way kubectl apply -f and
// Helm's kube client read a stream (cli-runtime's StreamVisitor): with
// apimachinery's YAMLOrJSONDecoder, which takes a stream that starts with
// "{" for JSON values (and goes on as YAML after one value that is not
// followed by another), and anything else for YAML documents separated by
// "---" lines. A file's name does not choose the format, for kubectl
// either. Empty documents
// (nothing, or only comments) are skipped; a list is flattened
// (ParseDocument). A file that holds a NUL byte is not text, and is
// refused. where names the file in error messages; an error is an *Error.
func ParseFile(where string, content []byte) ([]*unstructured.Unstructured, error) {
	// Neither YAML nor JSON holds a NUL byte (YAML allows no control
	// character but tab and line breaks, JSON none outside an escape), yet
	// the YAML reader takes a file of NUL bytes for one empty document: a
	// binary file, or a sparse file of an archive, would be a render of no
	// objects.
	if i := bytes.IndexByte(content, 0); i >= 0 {
		return nil, &Error{Where: where, Err: fmt.Errorf("a NUL byte at offset %d: the file is not text, neither YAML nor JSON", i)}
	}
	var objs []*unstructured.Unstructured
	// 4096: the look-ahead kubectl's StreamVisitor gives the decoder to
	// tell JSON from YAML.
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(content), 4096)
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, &Error{Where: where, Doc: doc, Err: err}
		}
		got, err := ParseDocument(raw)
		if err != nil {
			return nil, &Error{Where: where, Doc: doc, Err: err}
		}
		objs = append(objs, got...)
	}
}

// ParseDocument turns the JSON of one document into objects: none for an
// empty document, else the one object, or the objects of a list. A list is
// what apimachinery's unstructured decoder takes for one, any document with
// an "items" field (kind List, ConfigMapList, or any other), and kubectl's
// builder flattens: its items, each an object, those of an item that is a
// list in turn; an item with neither apiVersion nor kind gets the list's
// apiVersion and its kind less "List" (a ConfigMapList's items are
// ConfigMaps), as the decoder gives them. Each object must have
// apiVersion, kind and metadata.name.
func ParseDocument(data []byte) ([]*unstructured.Unstructured, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var v any
	// utiljson keeps integers as int64, as unstructured objects need.
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object but %s", jsonType(v))
	}
	if len(obj) == 0 {
		return nil, nil
	}
	return flatten(obj, "", 0)
}

// maxListDepth bounds the lists within lists a document may nest.
const maxListDepth = 8

// flatten gives the objects of obj: obj itself, or the items of a list,
// flattened. at names the item in errors ("List item 2: "); depth counts
// the lists around obj.
func flatten(obj map[string]any, at string, depth int) ([]*unstructured.Unstructured, error) {
	rawItems, isList := obj["items"]
	if !isList {
		u := &unstructured.Unstructured{Object: obj}
		if err := Validate(u); err != nil {
			return nil, fmt.Errorf("%s%w", at, err)
		}
		return []*unstructured.Unstructured{u}, nil
	}
	if depth >= maxListDepth {
		return nil, fmt.Errorf("%slists nested more than %d deep", at, maxListDepth)
	}
	if rawItems == nil {
		return nil, nil
	}
	items, ok := rawItems.([]any)
	if !ok {
		return nil, fmt.Errorf("%s%s items is not an array but %s", at, kindOf(obj), jsonType(rawItems))
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	var objs []*unstructured.Unstructured
	for i, item := range items {
		where := fmt.Sprintf("%s%s item %d: ", at, kindOf(obj), i+1)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%snot an object but %s", where, jsonType(item))
		}
		itemVersion, _ := m["apiVersion"].(string)
		itemKind, _ := m["kind"].(string)
		if itemVersion == "" && itemKind == "" {
			m["apiVersion"], m["kind"] = apiVersion, strings.TrimSuffix(kind, "List")
		}
		got, err := flatten(m, where, depth+1)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// kindOf names obj's kind in errors: "List" when it has none.
func kindOf(obj map[string]any) string {
	if kind, _ := obj["kind"].(string); kind != "" {
		return kind
	}
	return "List"
}

// Validate checks that u has the fields that identify an object.
func Validate(u *unstructured.Unstructured) error {
	apiVersion, kind, name := u.GetAPIVersion(), u.GetKind(), u.GetName()
	switch {
	case apiVersion == "":
		return fmt.Errorf("object has no apiVersion (kind %q, name %q)", kind, name)
	case kind == "":
		return fmt.Errorf("object has no kind (apiVersion %q, name %q)", apiVersion, name)
	case name == "":
		return fmt.Errorf("%s %s has no metadata.name", apiVersion, kind)
	}
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		return fmt.Errorf("%s %s %s: %w", apiVersion, kind, name, err)
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
