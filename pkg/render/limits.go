package render

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
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

func (l Limits) withDefaults() Limits {
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

// Runner runs the work of a render that runs what the source holds:
// Helm's templates, which do not stop at a deadline, and kustomize, which
// reaches for the network when a kustomization tells it to.
type Runner interface {
	// Template templates a chart, packaged or a directory.
	Template(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error)
	// Build builds a kustomization that kustomize.Check has checked.
	Build(ctx context.Context, req KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error)
}

// InProcess runs charts and kustomizations in this process. Helm's template
// engine does not stop at a deadline and a process that builds
// kustomizations should have no network, so convoy-apiserver uses a
// Sandbox; tests and tools that render trusted sources use this.
type InProcess struct{}

// Template implements Runner.
func (InProcess) Template(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error) {
	return templateChart(ctx, req)
}

// Build implements Runner.
func (InProcess) Build(_ context.Context, req KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error) {
	return buildKustomization(req)
}

// DefaultBuildCacheBytes bounds the builds an Engine keeps (WithBuildCache).
const DefaultBuildCacheBytes = 32 << 20

// Engine holds what every render of convoy-apiserver shares: the Fetcher of
// sources (its caches and slots), where charts are templated and
// kustomizations built, the builds kept, and the Limits.
// Renderers and Stores built from it are cheap; build them per Release, with
// the Release's identity's clients. There is no package-level Engine: the
// composition root (pkg/apiserver) builds the one of convoy-apiserver from
// its flags and passes it down, and tests and tools build their own.
type Engine struct {
	runner  Runner
	sources *source.Fetcher
	limits  Limits
	// builds are the objects (their JSON) of kustomizations and chart
	// directories, keyed by the content of the files they can read
	// (buildKey); nil: none kept.
	builds *agecache.Cache[string, []byte]
	// decodes are the tokens of the stored renders its Stores decode at
	// once (MaxStoredDecodes).
	decodes chan struct{}
}

// NewEngine returns an Engine that fetches sources with sources, templates
// charts and builds kustomizations with runner (InProcess when nil) within
// limits (zero fields take their defaults). sources is required.
func NewEngine(sources *source.Fetcher, runner Runner, limits Limits) *Engine {
	if sources == nil {
		panic("render.NewEngine: no source.Fetcher")
	}
	if runner == nil {
		runner = InProcess{}
	}
	return &Engine{runner: runner, sources: sources, limits: limits.withDefaults(), decodes: make(chan struct{}, MaxStoredDecodes)}
}

// WithBuildCache makes e keep the builds of kustomizations and chart
// directories, at most maxBytes of their JSON (--build-cache-bytes), each
// for at most maxAge, keyed by the content of the files each can read: a
// new artifact or commit whose change is elsewhere builds nothing again. It
// returns e.
func (e *Engine) WithBuildCache(maxBytes int, maxAge time.Duration, clk clock.PassiveClock) *Engine {
	if maxBytes > 0 {
		e.builds = agecache.New[string, []byte](maxBytes, maxAge, clk, func(b []byte) int { return len(b) })
	}
	return e
}

// cachedBuild returns the build of key from the build cache, else builds
// it and keeps it when it succeeds.
func (e *Engine) cachedBuild(key string, build func() ([]*unstructured.Unstructured, *failure.Error)) ([]*unstructured.Unstructured, *failure.Error) {
	if e.builds != nil {
		if data, ok := e.builds.Get(key); ok {
			var items []map[string]any
			if err := utiljson.Unmarshal(data, &items); err == nil {
				agecache.CountLookup(agecache.CacheBuild, true)
				objs := make([]*unstructured.Unstructured, len(items))
				for i, item := range items {
					objs[i] = &unstructured.Unstructured{Object: item}
				}
				return objs, nil
			}
		}
		agecache.CountLookup(agecache.CacheBuild, false)
	}
	objs, err := build()
	if err != nil || e.builds == nil {
		return objs, err
	}
	items := make([]map[string]any, len(objs))
	for i, o := range objs {
		items[i] = o.Object
	}
	if data, merr := json.Marshal(items); merr == nil {
		e.builds.Put(key, data)
	}
	return objs, nil
}

// Limits returns the Engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

// Renderer returns a Renderer that reads inputs and scopes namespaces with
// scoper.
func (e *Engine) Renderer(inputs source.Inputs, scoper Scoper) *Renderer {
	return &Renderer{engine: e, inputs: inputs, scoper: scoper}
}

// Store returns the render store on client. The Stores of an Engine
// decode at most MaxStoredDecodes stored renders at once.
func (e *Engine) Store(client kubernetes.Interface) *Store {
	return &Store{client: client, limits: e.limits, decodes: e.decodes}
}

// errRenderTimeout is the cause of the deadline of a render.
var errRenderTimeout = errors.New("render timeout")

// timedOut returns the RenderTimeout error when ctx ended with the render's
// deadline, nil otherwise.
func (e *Engine) timedOut(ctx context.Context, where string) *failure.Error {
	if !errors.Is(context.Cause(ctx), errRenderTimeout) {
		return nil
	}
	return failure.New(ReasonRenderTimeout, nil, "%s took longer than the render timeout of %s (--render-timeout) and was stopped", where, e.limits.Timeout)
}

// checkSize fails a render past MaxObjects or MaxBytes.
func (e *Engine) checkSize(r *Render) *failure.Error {
	if n := len(r.Objects); n > e.limits.MaxObjects {
		return failure.New(ReasonTooManyObjects, nil, "the render holds %d objects, more than the limit of %d (--max-render-objects)", n, e.limits.MaxObjects)
	}
	if r.Size > e.limits.MaxBytes {
		return failure.New(ReasonRenderTooLarge, nil, "the render is %d bytes of JSON, more than the limit of %d (--max-render-bytes)", r.Size, e.limits.MaxBytes)
	}
	return nil
}
