package render

// Reasons of a render failure (a *failure.Error: Renderer.Render returns no
// other error). Each names the step that failed; the source and the
// inputs have theirs in pkg/source.
//
// Messages count positions as follows: "document N" is the N-th non-empty
// YAML document of a key, from 1, as an editor counts them; "item N" is the
// N-th item of a List, from 1; "valuesFrom N" and "mutation N" are indexes
// into spec.content.valuesFrom and spec.mutations, from 0, as in
// spec.mutations[N].
const (
	// ReasonValuesNotFound: a valuesFrom object or key is missing and not optional.
	ReasonValuesNotFound = "ValuesNotFound"
	// ReasonValuesInvalid: values that do not parse to a map, a valuesFrom of
	// an unknown kind, or values that fail the chart's values.schema.json.
	ReasonValuesInvalid = "ValuesInvalid"
	// ReasonManifestInvalid: a file that is not text (it holds a NUL byte), a
	// document that does not parse, an object without apiVersion, kind or
	// metadata.name, or two objects with the same key.
	ReasonManifestInvalid = "ManifestInvalid"
	// ReasonChartInvalid: chart.tgz does not load as a Helm chart, or the
	// chart cannot be installed (library chart, kubeVersion constraint).
	ReasonChartInvalid = "ChartInvalid"
	// ReasonTemplateFailed: Helm's template engine failed; the message is
	// Helm's and names the template file.
	ReasonTemplateFailed = "TemplateFailed"
	// ReasonMutationFailed: a mutation could not be applied.
	ReasonMutationFailed = "MutationFailed"
)
