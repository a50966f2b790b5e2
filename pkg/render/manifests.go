package render

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

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// renderManifests parses files of plain manifests, in order. Values are
// not read for plain manifests: they are not templates.
func renderManifests(files []source.File) ([]*unstructured.Unstructured, *failure.Error) {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		got, err := parseFile(f.Where, f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// parseFile parses one file of manifests. A name ending .json holds one or
// more concatenated JSON values; any other name holds YAML, with documents
// separated by "---" lines. Empty documents (nothing, or only comments) are
// skipped; a List is flattened. where names the file in error messages.
func parseFile(where, name string, content []byte) ([]*unstructured.Unstructured, *failure.Error) {
	var objs []*unstructured.Unstructured
	add := func(doc int, data []byte) *failure.Error {
		got, err := parseDocument(data)
		if err != nil {
			return failure.New(ReasonManifestInvalid, err, "%s document %d", where, doc)
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
				return nil, failure.New(ReasonManifestInvalid, err, "%s document %d", where, doc)
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
			return nil, failure.New(ReasonManifestInvalid, err, "%s document %d", where, doc)
		}
		data, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, failure.New(ReasonManifestInvalid, err, "%s document %d", where, doc)
		}
		if err := add(doc, data); err != nil {
			return nil, err
		}
	}
}

// parseDocument turns the JSON of one document into objects: none for an
// empty document, the items of a List, else the one object. Each object must
// have apiVersion, kind and metadata.name.
func parseDocument(data []byte) ([]*unstructured.Unstructured, error) {
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
		if err := validateObject(u); err != nil {
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
		if err := validateObject(iu); err != nil {
			return nil, fmt.Errorf("List item %d: %w", i+1, err)
		}
		objs = append(objs, iu)
	}
	return objs, nil
}

// validateObject checks that u has the fields that identify an object.
func validateObject(u *unstructured.Unstructured) error {
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
