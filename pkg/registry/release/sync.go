package release

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

// NewSyncREST returns the storage of releases/sync: the request is the
// annotation convoy.kumodo.io/sync-requested-at, which convoy's controller
// handles.
func NewSyncREST(r *requests.Requester) *RequestREST {
	return &RequestREST{
		kind:      "ReleaseSync",
		newObject: func() runtime.Object { return &subresourcesv1alpha1.ReleaseSync{} },
		record: func(ctx context.Context, namespace, name, requester string) (metav1.MicroTime, error) {
			return r.Request(ctx, namespace, name, requester, "")
		},
		answer: func(meta metav1.ObjectMeta, at metav1.MicroTime, by string) runtime.Object {
			return &subresourcesv1alpha1.ReleaseSync{ObjectMeta: meta, RequestedAt: &at, RequestedBy: by}
		},
		TableConvertor: syncTable,
	}
}
