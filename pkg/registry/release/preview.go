package release

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
)

// PreviewREST serves GET releases/NAME/preview: the desired render, the same
// one /diff compares, with Secret values redacted.
type PreviewREST struct {
	releases convoyclient.ReleasesGetter
	checker  *drift.Checker
	redactor *redact.Redactor
	rest.TableConvertor
}

var (
	_ rest.GetterWithOptions = &PreviewREST{}
	_ rest.Scoper            = &PreviewREST{}
)

// NewPreviewREST returns the storage of releases/preview.
func NewPreviewREST(releases convoyclient.ReleasesGetter, checker *drift.Checker, redactor *redact.Redactor) *PreviewREST {
	return &PreviewREST{releases: releases, checker: checker, redactor: redactor, TableConvertor: previewTable}
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
	release, opts, err := getRelease(ctx, r.releases, name, options)
	if err != nil {
		return nil, err
	}
	result, err := r.checker.Desired(ctx, release, desired.Ask{Render: opts.Render, Revision: opts.Revision})
	if err != nil {
		return nil, statusOf(release, opts, err)
	}
	preview := &subresourcesv1alpha1.ReleasePreview{
		ObjectMeta:     metav1.ObjectMeta{Name: release.Name, Namespace: release.Namespace},
		RenderRef:      result.Ref,
		RenderSource:   result.Source,
		ResolvedSource: result.Resolved,
		// Additive: a client of before spec.valuesSource ignores it.
		ResolvedValuesSource: result.ValuesResolved,
	}
	for _, obj := range r.redactor.Objects(result.Objects) {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("encoding %s: %w", convoyv1alpha1.ObjectKeyOf(obj).Describe(), err))
		}
		preview.Objects = append(preview.Objects, runtime.RawExtension{Raw: raw})
	}
	return preview, nil
}
