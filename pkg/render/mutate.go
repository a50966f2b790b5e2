package render

import (
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
)

// Mutation kinds, as they appear in messages.
const (
	mutationPatch       = "patch"
	mutationJSONPatch   = "jsonPatch"
	mutationLabels      = "labels"
	mutationAnnotations = "annotations"
)

// mutate applies spec.mutations[i] to each object its target selects, in
// place. A target selects an object when each of its non-empty fields equals
// the object's (group, version, kind, name, namespace: after namespace
// defaulting) and its labelSelector, when set, matches the object's labels;
// an empty target selects every object. A mutation that selects nothing is
// not an error.
//
//   - patch: a strategic merge patch when the object's apiVersion and kind
//     are a type of client-go's scheme (the built-in kinds), else a JSON
//     merge patch (RFC 7386);
//   - jsonPatch: an RFC 6902 JSON patch;
//   - labels, annotations: merged into metadata, the mutation's value wins.
//
// A patch may change any field, apiVersion, kind, name and namespace
// included; the result must still have apiVersion, kind and metadata.name.
func mutate(i int, m convoyv1alpha1.Mutation, objs []*unstructured.Unstructured) *failure.Error {
	kind, err := mutationKind(m)
	if err != nil {
		return failure.New(ReasonMutationFailed, err, "mutation %d", i)
	}
	var sel labels.Selector
	if m.Target.LabelSelector != nil {
		sel, err = metav1.LabelSelectorAsSelector(m.Target.LabelSelector.AsMetav1())
		if err != nil {
			return failure.New(ReasonMutationFailed, err, "mutation %d: target.labelSelector", i)
		}
	}
	var jp jsonpatch.Patch
	if kind == mutationJSONPatch {
		if jp, err = decodeJSONPatch(m.JSONPatch); err != nil {
			return failure.New(ReasonMutationFailed, err, "mutation %d (%s)", i, kind)
		}
	}

	for _, u := range objs {
		if !selects(m.Target, sel, u) {
			continue
		}
		var err error
		switch kind {
		case mutationPatch:
			err = applyPatch(u, m.Patch.Raw)
		case mutationJSONPatch:
			err = applyJSONPatch(u, jp)
		case mutationLabels:
			u.SetLabels(merged(u.GetLabels(), m.Labels))
		case mutationAnnotations:
			u.SetAnnotations(merged(u.GetAnnotations(), m.Annotations))
		}
		if err != nil {
			return failure.New(ReasonMutationFailed, err, "mutation %d (%s) on %s", i, kind, convoyv1alpha1.ObjectKeyOf(u).Describe())
		}
	}
	return nil
}

// mutationKind tells which one of patch, jsonPatch, labels and annotations
// a mutation sets.
func mutationKind(m convoyv1alpha1.Mutation) (string, error) {
	var set []string
	if m.Patch != nil {
		set = append(set, mutationPatch)
	}
	if m.JSONPatch != nil {
		set = append(set, mutationJSONPatch)
	}
	if m.Labels != nil {
		set = append(set, mutationLabels)
	}
	if m.Annotations != nil {
		set = append(set, mutationAnnotations)
	}
	switch len(set) {
	case 0:
		return "", fmt.Errorf("sets none of patch, jsonPatch, labels, annotations")
	case 1:
		return set[0], nil
	default:
		return "", fmt.Errorf("sets more than one of patch, jsonPatch, labels, annotations: %s", strings.Join(set, ", "))
	}
}

// selects tells whether target (with its labelSelector parsed as sel) selects u.
func selects(t convoyv1alpha1.MutationTarget, sel labels.Selector, u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	switch {
	case t.Group != "" && t.Group != gvk.Group,
		t.Version != "" && t.Version != gvk.Version,
		t.Kind != "" && t.Kind != gvk.Kind,
		t.Name != "" && t.Name != u.GetName(),
		t.Namespace != "" && t.Namespace != u.GetNamespace():
		return false
	}
	return sel == nil || sel.Matches(labels.Set(u.GetLabels()))
}

// applyPatch applies a strategic merge patch to a built-in kind and a JSON
// merge patch to any other.
func applyPatch(u *unstructured.Unstructured, patch []byte) error {
	if len(patch) == 0 {
		return fmt.Errorf("patch is empty")
	}
	original, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	var out []byte
	if typed, serr := scheme.Scheme.New(u.GroupVersionKind()); serr == nil {
		out, err = strategicpatch.StrategicMergePatch(original, patch, typed)
		if err != nil {
			return fmt.Errorf("strategic merge patch: %w", err)
		}
	} else {
		out, err = jsonpatch.MergePatch(original, patch)
		if err != nil {
			return fmt.Errorf("JSON merge patch: %w", err)
		}
	}
	return replaceObject(u, out)
}

// decodeJSONPatch turns the operations of a mutation into an RFC 6902 patch.
func decodeJSONPatch(ops []convoyv1alpha1.JSONPatchOperation) (jsonpatch.Patch, error) {
	type operation struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		From  string          `json:"from,omitempty"`
		Value json.RawMessage `json:"value,omitempty"`
	}
	out := make([]operation, 0, len(ops))
	for _, o := range ops {
		op := operation{Op: o.Op, Path: o.Path, From: o.From}
		if o.Value != nil {
			op.Value = o.Value.Raw
		}
		out = append(out, op)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return jsonpatch.DecodePatch(data)
}

func applyJSONPatch(u *unstructured.Unstructured, p jsonpatch.Patch) error {
	original, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	out, err := p.Apply(original)
	if err != nil {
		return fmt.Errorf("JSON patch: %w", err)
	}
	return replaceObject(u, out)
}

// replaceObject replaces the content of u with the patched JSON, which must
// still be an object with apiVersion, kind and metadata.name.
func replaceObject(u *unstructured.Unstructured, data []byte) error {
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return err
	}
	patched := &unstructured.Unstructured{Object: obj}
	if err := manifest.Validate(patched); err != nil {
		return fmt.Errorf("patched object: %w", err)
	}
	u.Object = obj
	return nil
}

// merged returns base with add merged in; add wins.
func merged(base, add map[string]string) map[string]string {
	if len(add) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(add))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}
