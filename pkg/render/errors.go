package render

import "github.com/kumodo/convoy-apiserver/pkg/failure"

// Reasons of a render failure (a *failure.Error: Renderer.Render returns no
// other error). Each names the step that failed; the source and the
// inputs have theirs in pkg/source.
//
// Messages count positions as follows: "document N" is the N-th non-empty
// YAML document of a key, from 1, as an editor counts them; "item N" is the
// N-th item of a List, from 1; "valuesFiles N", "valuesFrom N" and
// "mutation N" are indexes into spec.content.valuesFiles,
// spec.content.valuesFrom and spec.mutations, from 0, as in
// spec.mutations[N].
var (
	ReasonValuesNotFound = failure.Declare(failure.Reason{
		Name: "ValuesNotFound", Class: failure.ClassNotFound, Shows: failure.InSyncAndResponse,
		Means:  "a valuesFrom object or key, or a valuesFiles file of the chart's directory, is missing and not optional",
		Action: "create the ConfigMap or Secret (or the key) spec.content.valuesFrom names, or add the file spec.content.valuesFiles names to the source, or mark it optional",
	})
	ReasonValuesInvalid = failure.Declare(failure.Reason{
		Name: "ValuesInvalid", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "values that do not parse to a map, a valuesFrom of an unknown kind, a valuesFiles path outside the chart's directory, or values that fail the chart's values.schema.json",
		Action: "correct the values as the message says",
	})
	ReasonManifestInvalid = failure.Declare(failure.Reason{
		Name: "ManifestInvalid", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "a file that is not text (it holds a NUL byte), a document that does not parse, an object without apiVersion, kind or metadata.name, or two objects with the same key",
		Action: "correct the file and document the message names",
	})
	ReasonChartInvalid = failure.Declare(failure.Reason{
		Name: "ChartInvalid", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "the chart does not load as a Helm chart, or cannot be installed (a library chart, a kubeVersion constraint)",
		Action: "correct the chart; `helm lint` and `helm template` show the same error",
	})
	ReasonTemplateFailed = failure.Declare(failure.Reason{
		Name: "TemplateFailed", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "Helm's template engine failed; the message is Helm's and names the template file",
		Action: "correct the template or the values; `helm template` shows the same error",
	})
	ReasonMutationFailed = failure.Declare(failure.Reason{
		Name: "MutationFailed", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "a mutation of spec.mutations could not be applied",
		Action: "correct spec.mutations[N] as the message says",
	})
)
