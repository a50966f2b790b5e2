package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// defaultValuesKey is the key of a valuesFrom entry that names none.
const defaultValuesKey = "values.yaml"

// values reads spec.content of a Release into Helm's user-supplied values:
// each valuesFiles file of the chart (read from files; where names the
// chart), then each valuesFrom entry, in order, then the inline values,
// merged the way `helm template -f a.yaml -f b.yaml` merges its files
// (Helm's loader.MergeMaps: maps merge deeply, any other value of a later
// source replaces the earlier one; a null stays, and deletes the chart's
// default when Helm coalesces). The chart's own values.yaml is coalesced
// under them later, by Helm.
//
// Only charts read values: a Release whose source holds plain manifests or
// a kustomization reads neither its valuesFiles nor its valuesFrom objects,
// so a missing one does not fail it.
func (r *Renderer) values(ctx context.Context, release *convoyv1alpha1.Release, where string, files chartFiles) (map[string]any, *failure.Error) {
	vals := map[string]any{}
	content := release.Spec.Content
	if content == nil {
		return vals, nil
	}
	for i, f := range content.ValuesFiles {
		fileWhere, from := where, files
		switch f.Source {
		case "", convoyv1alpha1.ValuesFileSourceChart:
		case convoyv1alpha1.ValuesFileSourceValues:
			vsrc := valuesSourceOf(ctx)
			if vsrc == nil { // Render fetches it first: never, but not silently
				return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "valuesFiles %d reads source values, but spec.valuesSource was not fetched", i)
			}
			fileWhere, from = valuesSourceFiles(vsrc)
		default:
			return nil, failure.New(ReasonValuesInvalid, nil, "valuesFiles %d: source %q is neither %s nor %s", i, f.Source, convoyv1alpha1.ValuesFileSourceChart, convoyv1alpha1.ValuesFileSourceValues)
		}
		m, err := r.valuesFile(fileWhere, i, f, from)
		if err != nil {
			return nil, err
		}
		if m != nil {
			vals = loader.MergeMaps(vals, m)
		}
	}
	for i, ref := range content.ValuesFrom {
		data, err := r.valuesData(ctx, release.Namespace, i, ref)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue // optional and missing
		}
		key := ref.Key
		if key == "" {
			key = defaultValuesKey
		}
		m, perr := loader.LoadValues(bytes.NewReader(data))
		if perr != nil {
			where := fmt.Sprintf("valuesFrom %d: %s key %s", i, convoyv1alpha1.ObjectKey{Kind: ref.Kind, Namespace: release.Namespace, Name: ref.Name}.Describe(), key)
			if ref.Kind == "Secret" {
				// YAML errors can quote the text they failed on: keep
				// Secret data out of the message and out of Err.
				return nil, failure.New(ReasonValuesInvalid, errors.New("not a YAML map of values (details withheld: Secret data)"), "%s", where)
			}
			return nil, failure.New(ReasonValuesInvalid, perr, "%s is not a YAML map of values", where)
		}
		vals = loader.MergeMaps(vals, m)
	}
	if content.Values != nil && len(bytes.TrimSpace(content.Values.Raw)) > 0 {
		m, err := loader.LoadValues(bytes.NewReader(content.Values.Raw))
		if err != nil {
			return nil, failure.New(ReasonValuesInvalid, err, "spec.content.values is not a map of values")
		}
		vals = loader.MergeMaps(vals, m)
	}
	return vals, nil
}

// valuesData reads the raw values of one valuesFrom entry. It returns nil
// data and no error for an optional entry whose object or key is missing.
func (r *Renderer) valuesData(ctx context.Context, namespace string, i int, ref convoyv1alpha1.ValuesReference) ([]byte, *failure.Error) {
	key := ref.Key
	if key == "" {
		key = defaultValuesKey
	}
	what := fmt.Sprintf("valuesFrom %d: %s", i, convoyv1alpha1.ObjectKey{Kind: ref.Kind, Namespace: namespace, Name: ref.Name}.Describe())

	var (
		data  []byte
		found bool
		err   error
	)
	switch ref.Kind {
	case "ConfigMap":
		cm, gerr := r.inputs.ConfigMap(ctx, namespace, ref.Name)
		if err = gerr; err == nil {
			var s string
			s, found = cm.Data[key]
			data = []byte(s)
		}
	case "Secret":
		s, gerr := r.inputs.Secret(ctx, namespace, ref.Name)
		if err = gerr; err == nil {
			data, found = s.Data[key]
		}
	default:
		return nil, failure.New(ReasonValuesInvalid, nil, "valuesFrom %d: kind %q is neither ConfigMap nor Secret", i, ref.Kind)
	}

	switch {
	case apierrors.IsNotFound(err):
		if ref.Optional {
			return nil, nil
		}
		return nil, failure.Quiet(ReasonValuesNotFound, err, "%s not found", what)
	case apierrors.IsForbidden(err):
		return nil, failure.New(sourcefailure.ReasonInputForbidden, err, "%s may not be read", what)
	case err != nil:
		return nil, sourcefailure.Unavailable(err, "%s could not be read", what)
	case !found:
		if ref.Optional {
			return nil, nil
		}
		return nil, failure.New(ReasonValuesNotFound, nil, "%s has no key %s", what, key)
	}
	if data == nil {
		data = []byte{} // present but empty: no values, not "missing"
	}
	return data, nil
}
