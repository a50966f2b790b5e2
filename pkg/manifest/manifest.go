// Package manifest parses files of Kubernetes manifests, YAML documents or
// concatenated JSON values, into objects that have an apiVersion, a kind
// and a name, with integers as int64 as unstructured objects need. The
// render of plain manifests and of a chart's CRDs uses it, and so does
// kubectl convoy rules test for the objects it reads.
package manifest

import (
	"bufio"
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
	"sigs.k8s.io/yaml"
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

// ParseFile parses one file of manifests. A name ending .json holds one or
// more concatenated JSON values; any other name holds YAML, with documents
// separated by "---" lines. Empty documents (nothing, or only comments) are
// skipped; a List is flattened. A file that holds a NUL byte is not text,
// and is refused. where names the file in error messages; an error is an
// *Error.
func ParseFile(where, name string, content []byte) ([]*unstructured.Unstructured, error) {
	// Neither YAML nor JSON holds a NUL byte (YAML allows no control
	// character but tab and line breaks, JSON none outside an escape), yet
	// the YAML reader takes a file of NUL bytes for one empty document: a
	// binary file, or a sparse file of an archive, would be a render of no
	// objects.
	if i := bytes.IndexByte(content, 0); i >= 0 {
		return nil, &Error{Where: where, Err: fmt.Errorf("a NUL byte at offset %d: the file is not text, neither YAML nor JSON", i)}
	}
	var objs []*unstructured.Unstructured
	add := func(doc int, data []byte) error {
		got, err := ParseDocument(data)
		if err != nil {
			return &Error{Where: where, Doc: doc, Err: err}
		}
		objs = append(objs, got...)
		return nil
	}

	if strings.HasSuffix(name, ".json") {
		dec := json.NewDecoder(bytes.NewReader(content))
		for doc := 1; ; doc++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				return objs, nil
			} else if err != nil {
				return nil, &Error{Where: where, Doc: doc, Err: err}
			}
			if err := add(doc, raw); err != nil {
				return nil, err
			}
		}
	}

	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	for doc := 1; ; doc++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, &Error{Where: where, Doc: doc, Err: err}
		}
		data, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, &Error{Where: where, Doc: doc, Err: err}
		}
		if err := add(doc, data); err != nil {
			return nil, err
		}
	}
}

// ParseDocument turns the JSON of one document into objects: none for an
// empty document, the items of a List, else the one object. Each object must
// have apiVersion, kind and metadata.name.
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
	u := &unstructured.Unstructured{Object: obj}
	if u.GetKind() != "List" {
		if err := Validate(u); err != nil {
			return nil, err
		}
		return []*unstructured.Unstructured{u}, nil
	}

	rawItems, found := obj["items"]
	if !found || rawItems == nil {
		return nil, nil
	}
	items, ok := rawItems.([]any)
	if !ok {
		return nil, fmt.Errorf("List items is not an array but %s", jsonType(rawItems))
	}
	objs := make([]*unstructured.Unstructured, 0, len(items))
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("List item %d: not an object but %s", i+1, jsonType(item))
		}
		iu := &unstructured.Unstructured{Object: m}
		if err := Validate(iu); err != nil {
			return nil, fmt.Errorf("List item %d: %w", i+1, err)
		}
		objs = append(objs, iu)
	}
	return objs, nil
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
