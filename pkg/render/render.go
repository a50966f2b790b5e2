// Package render turns a Release's source, content and mutations into the
// desired render: a sorted list of objects and its renderRef. It also keeps
// renders in the render store (store.go). It fetches the source with
// pkg/source and reads its inputs through source.Inputs, and knows nothing
// of the API server that calls it.
package render

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// Scoper tells whether a kind is namespaced on the target cluster. For a kind
// the cluster does not know it returns an error (meta.IsNoMatchError).
type Scoper interface {
	IsNamespaced(gvk schema.GroupVersionKind) (bool, error)
}

// Render is a desired render: its objects, sorted, and its renderRef.
type Render struct {
	// Ref is the first 16 hex digits of the SHA-256 of the canonical JSON of
	// the sorted objects.
	Ref     string
	Objects []*unstructured.Unstructured
	// Size is the length of that JSON, in bytes.
	Size int
	// Resolved is the artifact (or Git commit) a render of an OCI, Helm or
	// Git repository source was made from; nil for a ConfigMap. For a
	// stored render it is what its Secret names (nil: nothing), verified
	// only where the Release asks for signatures (pkg/desired).
	Resolved *subresourcesv1alpha1.ResolvedSource
	// ValuesResolved is the artifact (or Git commit) of spec.valuesSource a
	// render read values files from; nil when it read none, or for a
	// ConfigMap, or for a stored render (its Secret names spec.source's
	// revision only).
	ValuesResolved *subresourcesv1alpha1.ResolvedSource
}

// Renderer renders Releases: spec.source, then spec.content (for a chart),
// then namespace defaulting, then spec.mutations, then New. Engine.Renderer
// builds one. It holds no state of its own and is safe for concurrent use.
type Renderer struct {
	engine *Engine
	inputs source.Inputs
	scoper Scoper
}

// Render renders release: its source, fetched by the Engine's Fetcher (a
// packaged chart: renderChart; a directory of files: renderDirectory), its
// values, namespaces (defaultNamespaces) and mutations (mutate), then New:
// the steps docs/contributors/internals.md ("The render") lists. The same
// Release, inputs and artifacts give the same render and renderRef. Every
// error is a *failure.Error (the inputs' and the Scoper's wrapped in one)
// but the fetch's park.ErrParked; a render past the Engine's Limits fails
// with the limit's reason.
func (r *Renderer) Render(ctx context.Context, release *convoyv1alpha1.Release) (*Render, error) {
	if release == nil {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "no Release to render")
	}
	src, err := r.engine.sources.Fetch(ctx, release, r.inputs)
	if err != nil {
		return nil, err
	}
	vsrc, err := r.fetchValuesSource(ctx, release)
	if err != nil {
		return nil, err
	}
	ctx = withValuesSource(ctx, vsrc)
	ctx, cancel := context.WithTimeoutCause(ctx, r.engine.limits.Timeout, ErrTimeout)
	defer cancel()
	objs, ferr := r.render(ctx, release, src)
	if ferr != nil {
		if timeout := r.engine.timedOut(ctx, "the render"); timeout != nil && failure.ClassOf(ferr.Reason) == failure.ClassUnavailable {
			return nil, timeout
		}
		return nil, ferr
	}
	out, nerr := New(objs)
	if nerr != nil {
		return nil, nerr
	}
	if lerr := r.engine.checkSize(out); lerr != nil {
		return nil, lerr
	}
	out.Resolved = src.Resolved
	if vsrc != nil {
		out.ValuesResolved = vsrc.Resolved
	}
	return out, nil
}

// ResolveSource returns the digest the source of release resolves to now
// (a tag or a version constraint resolved, as its identity; "git:COMMIT"
// for a Git source), "" for a ConfigMap: what a render of release depends
// on beside its spec and inputs.
func (r *Renderer) ResolveSource(ctx context.Context, release *convoyv1alpha1.Release) (string, error) {
	return r.engine.sources.Resolve(ctx, release, r.inputs)
}

// ResolveValuesSource returns what spec.valuesSource of release resolves to
// now, as ResolveSource does for spec.source ("" for a ConfigMap). A
// render of a Release that reads values files from it depends on it too.
func (r *Renderer) ResolveValuesSource(ctx context.Context, release *convoyv1alpha1.Release) (string, error) {
	return r.engine.sources.ResolveValues(ctx, release, r.inputs)
}

// VerifyRevision verifies that resolved, the revision of its source a
// stored render of release names, verifies now under the Release's policy
// (source.Fetcher.VerifyRevision): a copy of resolved with the signatures
// it verified with (Verified, and VerifiedTag for a Git tag mode); nil, nil
// for a Release that asks for no signature. The values source's revision
// is VerifyValuesRevision's.
func (r *Renderer) VerifyRevision(ctx context.Context, release *convoyv1alpha1.Release, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error) {
	return r.engine.sources.VerifyRevision(ctx, release, r.inputs, resolved)
}

// VerifyValuesRevision verifies that resolved, the revision of
// spec.valuesSource a stored render of release names (Render.ValuesResolved),
// verifies now under the values source's verify
// (source.Fetcher.VerifyValuesRevision), returned as VerifyRevision
// returns spec.source's: a stored render that names none,
// or one of another source, is SignatureUnverified. nil, nil for a Release
// that reads no values file from its values source, or whose values source
// asks for no signature.
func (r *Renderer) VerifyValuesRevision(ctx context.Context, release *convoyv1alpha1.Release, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error) {
	if !ReadsValuesSource(release) {
		return nil, nil
	}
	return r.engine.sources.VerifyValuesRevision(ctx, release, r.inputs, resolved)
}

func (r *Renderer) render(ctx context.Context, release *convoyv1alpha1.Release, src *source.Source) ([]*unstructured.Unstructured, *failure.Error) {
	var objs []*unstructured.Unstructured
	var err *failure.Error
	if src.Chart != nil {
		objs, err = r.renderChart(ctx, release, src.Where, src.Chart)
	} else {
		objs, err = r.renderDirectory(ctx, release, src)
	}
	if err != nil {
		return nil, err
	}
	// Before any work per object: the namespaces, the mutations, and the
	// compare's requests.
	if n, limit := len(objs), r.engine.limits.MaxObjects; n > limit {
		return nil, failure.New(ReasonTooManyObjects, nil, "the render holds %d objects, more than the limit of %d (--max-render-objects)", n, limit)
	}
	if err := r.defaultNamespaces(objs, targetNamespace(release)); err != nil {
		return nil, err
	}
	for i, m := range release.Spec.Mutations {
		if err := mutate(i, m, objs); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// targetNamespace is spec.targetNamespace, else the Release's namespace.
func targetNamespace(release *convoyv1alpha1.Release) string {
	if release.Spec.TargetNamespace != "" {
		return release.Spec.TargetNamespace
	}
	return release.Namespace
}
