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
	return &Engine{runner: runner, sources: sources, limits: limits.WithDefaults(), decodes: make(chan struct{}, MaxStoredDecodes)}
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

// ErrTimeout is the cause (context.Cause) of the deadline of a render: a
// Runner tells a render past the render timeout, RenderTimeout, from one
// its caller stopped.
var ErrTimeout = errors.New("render timeout")

// timedOut returns the RenderTimeout error when ctx ended with the render's
// deadline, nil otherwise.
func (e *Engine) timedOut(ctx context.Context, where string) *failure.Error {
	if !errors.Is(context.Cause(ctx), ErrTimeout) {
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
