package release

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// PreviewREST serves GET releases/NAME/preview: the desired render, the same
// one /diff compares, with Secret values redacted.
type PreviewREST struct {
	releases convoyclient.ReleasesGetter
	targets  cluster.Targets
	render   *render.Engine
	redactor *redact.Redactor
	rest.TableConvertor
}

var (
	_ rest.GetterWithOptions = &PreviewREST{}
	_ rest.Scoper            = &PreviewREST{}
)

// NewPreviewREST returns the storage of releases/preview.
func NewPreviewREST(releases convoyclient.ReleasesGetter, targets cluster.Targets, renderEngine *render.Engine, redactor *redact.Redactor) *PreviewREST {
	return &PreviewREST{releases: releases, targets: targets, render: renderEngine, redactor: redactor, TableConvertor: previewTable}
}

// New implements rest.Storage.
func (*PreviewREST) New() runtime.Object { return &subresourcesv1alpha1.ReleasePreview{} }

// Destroy implements rest.Storage.
func (*PreviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*PreviewREST) NamespaceScoped() bool { return true }

// NewGetOptions implements rest.GetterWithOptions: ?render=REF.
func (*PreviewREST) NewGetOptions() (runtime.Object, bool, string) {
	return &subresourcesv1alpha1.ReleaseRenderOptions{}, false, ""
}

// Get returns the desired render of the Release name, rendered (or read from
// the render store) as the Release's identity.
func (r *PreviewREST) Get(ctx context.Context, name string, options runtime.Object) (_ runtime.Object, err error) {
	defer recoverAsInternalError(ctx, &err)
	release, ref, err := getRelease(ctx, r.releases, name, options)
	if err != nil {
		return nil, err
	}
	access, err := r.targets.ForRelease(ctx, release)
	if err != nil {
		return nil, resolveError(release, ref, err)
	}
	result, err := desired.For(r.render, nil, access).Resolve(ctx, release, ref)
	if err != nil {
		return nil, resolveError(release, ref, err)
	}
	preview := &subresourcesv1alpha1.ReleasePreview{
		ObjectMeta:   metav1.ObjectMeta{Name: release.Name, Namespace: release.Namespace},
		RenderRef:    result.Ref,
		RenderSource: result.Source,
	}
	for _, obj := range r.redactor.Objects(result.Objects) {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("encoding %s %s: %w", obj.GetKind(), obj.GetName(), err))
		}
		preview.Objects = append(preview.Objects, runtime.RawExtension{Raw: raw})
	}
	return preview, nil
}

var renderRefPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// getRelease reads the Release of the request and the ?render= option.
func getRelease(ctx context.Context, releases convoyclient.ReleasesGetter, name string, options runtime.Object) (*convoyv1alpha1.Release, string, error) {
	opts, ok := options.(*subresourcesv1alpha1.ReleaseRenderOptions)
	if !ok {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("unexpected options %T", options))
	}
	if opts.Render != "" && !renderRefPattern.MatchString(opts.Render) {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("render=%q is not a renderRef (16 lower-case hex digits)", opts.Render))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || namespace == "" {
		return nil, "", apierrors.NewBadRequest("a namespace is required")
	}
	release, err := releases.Releases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", apierrors.NewNotFound(subresourcesv1alpha1.Resource("releases"), name)
	}
	if err != nil {
		return nil, "", apierrors.NewInternalError(fmt.Errorf("reading release %s/%s: %w", namespace, name, err))
	}
	return release, opts.Render, nil
}
