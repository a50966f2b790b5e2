package release

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
)

// HealthREST serves GET releases/NAME/health: the Healthy condition, the
// healthSummary and the state of each inventory entry, as the health loop
// last wrote them. No rule is evaluated.
type HealthREST struct {
	releases    convoyclient.ReleasesGetter
	inventories convoyclient.ReleaseInventoriesGetter
	rest.TableConvertor
}

var (
	_ rest.Getter = &HealthREST{}
	_ rest.Scoper = &HealthREST{}
)

// NewHealthREST returns the storage of releases/health.
func NewHealthREST(releases convoyclient.ReleasesGetter, inventories convoyclient.ReleaseInventoriesGetter) *HealthREST {
	return &HealthREST{releases: releases, inventories: inventories, TableConvertor: healthTable}
}

// New implements rest.Storage.
func (*HealthREST) New() runtime.Object { return &subresourcesv1alpha1.ReleaseHealth{} }

// Destroy implements rest.Storage.
func (*HealthREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*HealthREST) NamespaceScoped() bool { return true }

// Get returns the health of the Release name.
func (r *HealthREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (_ runtime.Object, err error) {
	defer recoverAsInternalError(ctx, &err)
	release, _, err := getRelease(ctx, r.releases, name, &subresourcesv1alpha1.ReleaseRenderOptions{})
	if err != nil {
		return nil, err
	}
	inv, err := r.inventories.ReleaseInventories(release.Namespace).Get(ctx, release.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		inv = nil // not applied yet: no rows
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading inventory %s/%s: %w", release.Namespace, release.Name, err))
	}
	return &subresourcesv1alpha1.ReleaseHealth{
		ObjectMeta:    metav1.ObjectMeta{Name: release.Name, Namespace: release.Namespace},
		Healthy:       meta.FindStatusCondition(release.Status.Conditions, convoyv1alpha1.ConditionHealthy),
		HealthSummary: release.Status.HealthSummary,
		Entries:       inventory.Rows(inv),
	}, nil
}
