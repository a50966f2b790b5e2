package release

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

// NewRefreshREST returns the storage of releases/refresh: the request is
// the annotation convoy.kumodo.io/refresh-requested-at, which the leader's
// drift loop handles (pkg/observer's refresh.go).
func NewRefreshREST(r *requests.Requester) *RequestREST {
	return &RequestREST{
		kind:      "ReleaseRefresh",
		newObject: func() runtime.Object { return &subresourcesv1alpha1.ReleaseRefresh{} },
		record:    r.Refresh,
		answer: func(meta metav1.ObjectMeta, at metav1.MicroTime, by string) runtime.Object {
			return &subresourcesv1alpha1.ReleaseRefresh{ObjectMeta: meta, RequestedAt: &at, RequestedBy: by}
		},
		TableConvertor: refreshTable,
	}
}
