package render

import "fmt"

// Reasons of a render Error. Each names the step that failed.
const (
	// ReasonSourceNotFound: the source ConfigMap does not exist.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonSourceNotSupported: a source kind that is not built yet
	// (helmRepository, ociRepository).
	ReasonSourceNotSupported = "SourceNotSupported"
	// ReasonSourceInvalid: no source, more than one source, or a source
	// ConfigMap that holds neither a chart nor a manifest key.
	ReasonSourceInvalid = "SourceInvalid"
	// ReasonValuesNotFound: a valuesFrom object or key is missing and not optional.
	ReasonValuesNotFound = "ValuesNotFound"
	// ReasonValuesInvalid: values that do not parse to a map, a valuesFrom of
	// an unknown kind, or values that fail the chart's values.schema.json.
	ReasonValuesInvalid = "ValuesInvalid"
	// ReasonManifestInvalid: a document that does not parse, an object without
	// apiVersion, kind or metadata.name, or two objects with the same key.
	ReasonManifestInvalid = "ManifestInvalid"
	// ReasonChartInvalid: chart.tgz does not load as a Helm chart, or the
	// chart cannot be installed (library chart, kubeVersion constraint).
	ReasonChartInvalid = "ChartInvalid"
	// ReasonTemplateFailed: Helm's template engine failed; the message is
	// Helm's and names the template file.
	ReasonTemplateFailed = "TemplateFailed"
	// ReasonMutationFailed: a mutation could not be applied.
	ReasonMutationFailed = "MutationFailed"
	// ReasonInputForbidden: the identity the Release acts as may not read an
	// input (the source ConfigMap, a valuesFrom ConfigMap or Secret); the
	// message is the API server's, which names the user, the verb and the
	// object.
	ReasonInputForbidden = "InputForbidden"
	// ReasonInputUnavailable: an input could not be read for a reason other
	// than NotFound or Forbidden (timeout, server error), or the Scoper failed
	// for a reason other than an unknown kind. Unlike the reasons above, it
	// says nothing about the Release itself and may pass on a retry.
	ReasonInputUnavailable = "InputUnavailable"
)

// Error is a render failure that names its cause. Renderer.Render returns
// only *Error; Err is the underlying error (nil when there is none) and is
// what Unwrap returns, so errors.Is and errors.As see through it.
//
// Messages count positions as follows: "document N" is the N-th non-empty
// YAML document of a key, from 1, as an editor counts them; "item N" is the
// N-th item of a List, from 1; "valuesFrom N" and "mutation N" are indexes
// into spec.content.valuesFrom and spec.mutations, from 0, as in
// spec.mutations[N].
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Message says what failed and names the cause: the ConfigMap and key,
	// the valuesFrom entry, the template file, the mutation and object.
	Message string
	// Err is the underlying error.
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// errorf returns an *Error whose message is the formatted text, followed by
// ": " and err's message when err is not nil.
func errorf(reason string, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Reason: reason, Message: msg, Err: err}
}

// errorQuiet returns an *Error with the formatted message alone, for an err
// whose text would only repeat the message (a NotFound, say).
func errorQuiet(reason string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...), Err: err}
}
