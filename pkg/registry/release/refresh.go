package release

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/syncrequest"
)

// RefreshREST serves POST releases/NAME/refresh: it records the request on
// the Release (the annotation convoy.kumodo.io/refresh-requested-at), which
// the leader's drift loop handles.
type RefreshREST struct {
	requester *syncrequest.Requester
	rest.TableConvertor
}

var (
	_ rest.NamedCreater = &RefreshREST{}
	_ rest.Scoper       = &RefreshREST{}
)

// NewRefreshREST returns the storage of releases/refresh.
func NewRefreshREST(requester *syncrequest.Requester) *RefreshREST {
	return &RefreshREST{requester: requester, TableConvertor: refreshTable}
}

// New implements rest.Storage.
func (*RefreshREST) New() runtime.Object { return &subresourcesv1alpha1.ReleaseRefresh{} }

// Destroy implements rest.Storage.
func (*RefreshREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*RefreshREST) NamespaceScoped() bool { return true }

// Create records a refresh request for the Release name.
func (r *RefreshREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (_ runtime.Object, err error) {
	defer recoverAsInternalError(ctx, &err)
	req, ok := obj.(*subresourcesv1alpha1.ReleaseRefresh)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a ReleaseRefresh, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the ReleaseRefresh does not match the release %q in the path", req.Name, name))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || namespace == "" {
		return nil, apierrors.NewBadRequest("a namespace is required")
	}
	if createValidation != nil {
		if err := createValidation(ctx, req); err != nil {
			return nil, err
		}
	}
	requester := "unknown"
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		requester = u.GetName()
	}
	at, err := r.requester.Refresh(ctx, namespace, name, requester)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(subresourcesv1alpha1.Resource("releases"), name)
		}
		return nil, apierrors.NewInternalError(err)
	}
	return &subresourcesv1alpha1.ReleaseRefresh{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace},
		RequestedAt: &at,
		RequestedBy: requester,
	}, nil
}
