// Package render turns a Release's source, content and mutations into the
// desired render: a sorted list of objects and its renderRef. It also keeps
// renders in the render store (store.go). It reads its inputs through the
// Inputs interface and knows nothing of the API server that calls it.
package render

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Inputs reads the objects a render needs from the Release's namespace: the
// source ConfigMap and the ConfigMaps and Secrets of valuesFrom. A missing
// object returns an error for which apierrors.IsNotFound is true.
type Inputs interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

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
}

// Renderer renders Releases: spec.source, then spec.content (for a chart),
// then namespace defaulting, then spec.mutations, then New. It holds no
// state of its own and is safe for concurrent use.
type Renderer struct {
	engine *Engine
	inputs Inputs
	scoper Scoper
}

// NewRenderer returns a Renderer that reads inputs and scopes namespaces with
// scoper, templates charts in this process and has the default Limits (see
// Engine.Renderer for convoy-apiserver's).
func NewRenderer(inputs Inputs, scoper Scoper) *Renderer {
	return defaultEngine.Renderer(inputs, scoper)
}

// Render renders release: spec.source + spec.content + spec.mutations.
//
//  1. Source: spec.source.configMap names a ConfigMap in the Release's
//     namespace. With binaryData chart.tgz it is a packaged Helm chart (see
//     renderChart; data is then ignored); else every key of data ending
//     .yaml, .yml or .json holds plain manifests, read in sorted key order
//     (see renderManifests). helmRepository and ociRepository are not built
//     yet (SourceNotSupported).
//  2. Values (charts only): spec.content.valuesFrom in order, then
//     spec.content.values.
//  3. Namespaces: see defaultNamespaces.
//  4. Mutations, in order: see mutate.
//  5. New sorts the objects and computes the renderRef.
//
// The same Release and inputs always give the same render and renderRef.
// Every error is an *failure.Error; an error of Inputs or the Scoper is wrapped in it.
// A render past the Engine's Limits fails with the limit's reason
// (RenderTimeout, TooManyObjects, RenderTooLarge).
func (r *Renderer) Render(ctx context.Context, release *convoyv1alpha1.Release) (*Render, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.engine.limits.Timeout, errRenderTimeout)
	defer cancel()
	objs, err := r.render(ctx, release)
	if err != nil {
		if timeout := r.engine.timedOut(ctx, "the render"); timeout != nil && err.Reason == ReasonInputUnavailable {
			return nil, timeout
		}
		return nil, err
	}
	out, nerr := New(objs)
	if nerr != nil {
		return nil, nerr
	}
	if lerr := r.engine.checkSize(out); lerr != nil {
		return nil, lerr
	}
	return out, nil
}

func (r *Renderer) render(ctx context.Context, release *convoyv1alpha1.Release) ([]*unstructured.Unstructured, *failure.Error) {
	if release == nil {
		return nil, failure.New(ReasonSourceInvalid, nil, "no Release to render")
	}
	objs, err := r.source(ctx, release)
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

// source reads spec.source into objects.
func (r *Renderer) source(ctx context.Context, release *convoyv1alpha1.Release) ([]*unstructured.Unstructured, *failure.Error) {
	src := release.Spec.Source
	var set []string
	if src.ConfigMap != nil {
		set = append(set, "configMap")
	}
	if src.HelmRepository != nil {
		set = append(set, "helmRepository")
	}
	if src.OCIRepository != nil {
		set = append(set, "ociRepository")
	}
	switch {
	case len(set) == 0:
		return nil, failure.New(ReasonSourceInvalid, nil, "spec.source sets no source kind")
	case len(set) > 1:
		return nil, failure.New(ReasonSourceInvalid, nil, "spec.source sets more than one source kind: %s", strings.Join(set, ", "))
	case src.ConfigMap == nil:
		return nil, failure.New(ReasonSourceNotSupported, nil, "source kind %s is not built yet", set[0])
	}

	ns, name := release.Namespace, src.ConfigMap.Name
	source := convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: ns, Name: name}.Describe()
	cm, err := r.inputs.ConfigMap(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, failure.Quiet(ReasonSourceNotFound, err, "source %s not found", source)
	case apierrors.IsForbidden(err):
		return nil, failure.New(ReasonInputForbidden, err, "source %s may not be read", source)
	case err != nil:
		return nil, failure.New(ReasonInputUnavailable, err, "source %s could not be read", source)
	}
	if tgz, ok := cm.BinaryData[chartKey]; ok {
		return r.renderChart(ctx, release, fmt.Sprintf("%s binaryData %s", source, chartKey), tgz)
	}
	if len(manifestKeys(cm)) == 0 {
		return nil, failure.New(ReasonSourceInvalid, nil, "source %s holds neither binaryData %s nor a data key ending .yaml, .yml or .json", source, chartKey)
	}
	return renderManifests(cm)
}

// targetNamespace is spec.targetNamespace, else the Release's namespace.
func targetNamespace(release *convoyv1alpha1.Release) string {
	if release.Spec.TargetNamespace != "" {
		return release.Spec.TargetNamespace
	}
	return release.Namespace
}
