package release

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// RequestREST serves a POST that records a request on a Release (through
// pkg/requests): a sync (releases/NAME/sync, sync.go, for convoy's
// controller) or a refresh (releases/NAME/refresh, refresh.go, for the
// leader's drift loop).
type RequestREST struct {
	// kind is the kind of the body and of the answer.
	kind string
	// newObject returns an empty body.
	newObject func() runtime.Object
	// record records the request of requester and returns its time.
	record func(ctx context.Context, namespace, name, requester string) (metav1.MicroTime, error)
	// answer is the answer of a recorded request.
	answer func(meta metav1.ObjectMeta, at metav1.MicroTime, by string) runtime.Object
	rest.TableConvertor
}

var (
	_ rest.NamedCreater = &RequestREST{}
	_ rest.Scoper       = &RequestREST{}
)

// New implements rest.Storage.
func (s *RequestREST) New() runtime.Object { return s.newObject() }

// Destroy implements rest.Storage.
func (*RequestREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*RequestREST) NamespaceScoped() bool { return true }

// Create records a request for the Release name.
func (s *RequestREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (_ runtime.Object, err error) {
	defer recoverAsInternalError(ctx, &err)
	body, ok := obj.(metav1.Object)
	if !ok || reflect.TypeOf(obj) != reflect.TypeOf(s.newObject()) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a %s, got %T", s.kind, obj))
	}
	if body.GetName() != "" && body.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the %s does not match the release %q in the path", body.GetName(), s.kind, name))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || namespace == "" {
		return nil, apierrors.NewBadRequest("a namespace is required")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	requester := "unknown"
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		requester = u.GetName()
	}
	at, err := s.record(ctx, namespace, name, requester)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(subresourcesv1alpha1.Resource("releases"), name)
		}
		return nil, apierrors.NewInternalError(err)
	}
	return s.answer(metav1.ObjectMeta{Name: name, Namespace: namespace}, at, requester), nil
}
