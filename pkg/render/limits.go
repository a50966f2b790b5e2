package render

import (
	"time"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Reasons of a render that passed one of its Limits. Each names the limit
// and the flag that sets it.
var (
	ReasonRenderTimeout = failure.Declare(failure.Reason{
		Name: "RenderTimeout", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "the render took longer than --render-timeout and was stopped",
		Action: "make the chart or overlay cheaper to render, or raise --render-timeout",
	})
	ReasonTooManyObjects = failure.Declare(failure.Reason{
		Name: "TooManyObjects", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "the render holds more objects than --max-render-objects",
		Action: "split the Release, or raise --max-render-objects",
	})
	ReasonRenderTooLarge = failure.Declare(failure.Reason{
		Name: "RenderTooLarge", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "the render's JSON passes --max-render-bytes",
		Action: "split the Release, or raise --max-render-bytes",
	})
	ReasonStoredRenderTooLarge = failure.Declare(failure.Reason{
		Name: "StoredRenderTooLarge", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "a stored render inflates past --max-render-bytes, or holds a string longer than 2 MiB (no Kubernetes object holds one): refused while it is read",
		Action: "raise --max-render-bytes to what the controller stores, or investigate the render-store Secret (a string past 2 MiB is not one a Release can apply)",
	})
	ReasonRenderMemoryExceeded = failure.Declare(failure.Reason{
		Name: "RenderMemoryExceeded", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "templating a chart needed more memory than --render-memory-limit; its process was stopped",
		Action: "make the chart cheaper to render, or raise --render-memory-limit",
	})
	ReasonStoredRenderInvalid = failure.Declare(failure.Reason{
		Name: "StoredRenderInvalid", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "a render-store Secret that is not a render (another type, not gzip'd JSON objects) or whose content does not match the renderRef it is named for",
		Action: "investigate who wrote the render-store Secret; convoy's controller writes it again at the next sync",
	})
)

// Defaults of Limits.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxObjects = 5000
	DefaultMaxBytes   = 32 << 20
	DefaultMemory     = 256 << 20
)

// Limits bound the work of one render, so that one Release cannot hold a
// core, fill the memory or flood the API server with requests per object.
type Limits struct {
	// Timeout bounds one render; a chart's templating is stopped at it
	// (--render-timeout, default 30s).
	Timeout time.Duration
	// MaxObjects bounds the objects of a render (--max-render-objects,
	// default 5000): the compare sends up to two requests per object.
	MaxObjects int
	// MaxBytes bounds the canonical JSON of a render, what a chart's
	// templating may output and what a stored render may inflate to
	// (--max-render-bytes, default 32 MiB).
	MaxBytes int
	// Memory bounds the memory of the process that templates one chart
	// (--render-memory-limit): RLIMIT_DATA, which counts the Go heap and
	// every private writable mapping, so it bounds the real memory the
	// process can take (docs/contributors/performance.md: what a render
	// needs).
	Memory int
	// MaxValuesFileBytes bounds one file of spec.content.valuesFiles
	// (--max-values-file-bytes, default 1 MiB): a larger one is refused
	// before it is parsed.
	MaxValuesFileBytes int
}

// WithDefaults is l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxObjects <= 0 {
		l.MaxObjects = DefaultMaxObjects
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.MaxValuesFileBytes <= 0 {
		l.MaxValuesFileBytes = DefaultMaxValuesFileBytes
	}
	return l
}
