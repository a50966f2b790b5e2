package release

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
)

// DiffREST serves GET releases/NAME/diff: the drift check of the drift loop,
// run now. A check that cannot complete is a ReleaseDiff with the result
// Undetermined and its reason, as in the InSync condition; only a render
// asked for with ?render= that is not stored, or a revision asked for with
// ?revision= that the source does not have, is an error (404).
//
// It also lists the extraObjects: the ReleaseInventory's entries that the
// render does not contain and that still exist (drift.Report.ExtraObjects),
// and each object's contested fields from the Release's status.selfHeal (the
// report has them): every replica answers the same, whichever runs the
// drift loop.
type DiffREST struct {
	releases convoyclient.ReleasesGetter
	checker  *drift.Checker
	rest.TableConvertor
}

var (
	_ rest.GetterWithOptions = &DiffREST{}
	_ rest.Scoper            = &DiffREST{}
)

// NewDiffREST returns the storage of releases/diff.
func NewDiffREST(releases convoyclient.ReleasesGetter, checker *drift.Checker) *DiffREST {
	return &DiffREST{releases: releases, checker: checker, TableConvertor: diffTable}
}

// New implements rest.Storage.
func (*DiffREST) New() runtime.Object { return &subresourcesv1alpha1.ReleaseDiff{} }

// Destroy implements rest.Storage.
func (*DiffREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*DiffREST) NamespaceScoped() bool { return true }

// NewGetOptions implements rest.GetterWithOptions: ?render=REF, ?revision=REV.
func (*DiffREST) NewGetOptions() (runtime.Object, bool, string) {
	return &subresourcesv1alpha1.ReleaseRenderOptions{}, false, ""
}

// Get compares the desired render of the Release name with the live objects.
func (r *DiffREST) Get(ctx context.Context, name string, options runtime.Object) (_ runtime.Object, err error) {
	defer recoverAsInternalError(ctx, &err)
	release, opts, err := getRelease(ctx, r.releases, name, options)
	if err != nil {
		return nil, err
	}
	report, err := r.checker.Check(ctx, release, drift.Options{Render: opts.Render, Revision: opts.Revision, ExtraObjects: true})
	if err != nil {
		return nil, statusOf(release, opts, err)
	}
	diff := &subresourcesv1alpha1.ReleaseDiff{
		ObjectMeta:   metav1.ObjectMeta{Name: release.Name, Namespace: release.Namespace},
		Result:       report.Result.Verdict,
		Reason:       report.Reason,
		Message:      report.Message,
		Objects:      report.Objects,
		ExtraObjects: report.ExtraObjects,
	}
	if report.Desired != nil {
		diff.RenderRef, diff.RenderSource, diff.ResolvedSource = report.Desired.Ref, report.Desired.Source, report.Desired.Resolved
		diff.ResolvedValuesSource = report.Desired.ValuesResolved
	}
	return diff, nil
}
