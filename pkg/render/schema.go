package render

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// validateValues checks the coalesced values against the values.schema.json
// of the chart and of each dependency, like Helm's
// chartutil.ValidateAgainstSchema, with one difference: a schema reference
// ($ref) to any other document (file:, http:, https:, urn:) is not loaded but
// stands for the permissive schema true. Helm would read local files and
// fetch URLs; convoy-apiserver renders on behalf of whoever can write the
// source ConfigMap, so a render must not reach the network or the server's
// files.
func validateValues(ch *chart.Chart, values map[string]any) error {
	var sb strings.Builder
	if ch.Schema != nil {
		if err := validateAgainst(values, ch.Schema); err != nil {
			fmt.Fprintf(&sb, "%s:\n%s", ch.Name(), err.Error())
		}
	}
	for _, sub := range ch.Dependencies() {
		raw, ok := values[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := validateValues(sub, subValues); err != nil {
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

const schemaURL = "file:///values.schema.json"

func validateAgainst(values map[string]any, schemaJSON []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unable to validate schema: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return err
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(offlineLoader{})
	if err := compiler.AddResource(schemaURL, doc); err != nil {
		return err
	}
	sch, err := compiler.Compile(schemaURL)
	if err != nil {
		return err
	}
	if err := sch.Validate(values); err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n")
		return errors.New(msg + "\n")
	}
	return nil
}

// offlineLoader loads no document: every reference is the schema true.
type offlineLoader struct{}

func (offlineLoader) Load(string) (any, error) { return true, nil }
