package release

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

func TestResolveError(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	cases := []struct {
		name        string
		err         error
		wantCode    int32
		wantReason  metav1.StatusReason
		wantMessage string
	}{
		{name: "not stored", err: fmt.Errorf("x: %w", render.ErrNotStored), wantCode: http.StatusNotFound,
			wantReason: metav1.StatusReasonNotFound, wantMessage: "render 0123456789abcdef is not in the render store of release shop/web"},
		{name: "render failed", err: fmt.Errorf("resolving: %w", &render.Error{Reason: "TemplateFailed", Message: "templates/deploy.yaml:3: nil pointer"}),
			wantCode: http.StatusUnprocessableEntity, wantReason: ReasonRenderFailed,
			wantMessage: "rendering release shop/web failed (TemplateFailed): templates/deploy.yaml:3: nil pointer"},
		{name: "inputs unavailable", err: &render.Error{Reason: render.ReasonInputUnavailable, Message: "reading ConfigMap shop/x: timeout"},
			wantCode: http.StatusServiceUnavailable, wantReason: metav1.StatusReasonServiceUnavailable, wantMessage: "reading ConfigMap shop/x: timeout"},
		{name: "an input the identity may not read", err: &render.Error{Reason: render.ReasonInputForbidden, Message: "source ConfigMap shop/x may not be read",
			Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New(`User "system:serviceaccount:shop:default" cannot get`))},
			wantCode: http.StatusUnprocessableEntity, wantReason: ReasonIdentityForbidden,
			wantMessage: `release shop/web: the identity it acts as was refused: source ConfigMap shop/x may not be read`},
		{name: "the Secret of the Cluster forbidden", err: &cluster.Error{Reason: cluster.ReasonForbidden, Message: "ServiceAccount shop/default may not get Secret shop/k"},
			wantCode: http.StatusUnprocessableEntity, wantReason: ReasonIdentityForbidden, wantMessage: "ServiceAccount shop/default may not get Secret shop/k"},
		{name: "cluster not found", err: &cluster.Error{Reason: cluster.ReasonClusterNotFound, Message: "Cluster shop/east not found"},
			wantCode: http.StatusUnprocessableEntity, wantReason: "ClusterNotFound", wantMessage: "release shop/web: Cluster shop/east not found"},
		{name: "anything else", err: errors.New("connection refused"), wantCode: http.StatusInternalServerError,
			wantReason: metav1.StatusReasonInternalError, wantMessage: "release shop/web: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var status apierrors.APIStatus
			require.ErrorAs(t, resolveError(release, "0123456789abcdef", tc.err), &status)
			assert.Equal(t, tc.wantCode, status.Status().Code)
			assert.Equal(t, tc.wantReason, status.Status().Reason)
			assert.Contains(t, status.Status().Message, tc.wantMessage)
		})
	}
}
