package drift

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// fakeInputs answers every read with err.
type fakeInputs struct{ err error }

func (f fakeInputs) ConfigMap(context.Context, string, string) (*corev1.ConfigMap, error) {
	return nil, f.err
}

func (f fakeInputs) Secret(context.Context, string, string) (*corev1.Secret, error) {
	return nil, f.err
}

type fakeStore struct{}

func (fakeStore) Get(_ context.Context, _, _, ref string) (*render.Render, error) {
	return nil, fmt.Errorf("%s: %w", ref, render.ErrNotStored)
}

type fakeTargets struct{ err error }

func (f fakeTargets) ForRelease(context.Context, *convoyv1alpha1.Release) (*cluster.Target, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &cluster.Target{}, nil
}

// The failures found before the compare become Undetermined reports with a
// reason, as the InSync condition shows them.
func TestCheckFailuresBeforeTheCompare(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		name        string
		inputErr    error
		targetErr   error
		ref         string
		wantReason  string
		wantMessage string
		wantErr     error
	}{
		{name: "render fails", inputErr: apierrors.NewNotFound(corev1.Resource("configmaps"), "web-manifests"),
			wantReason: ReasonRenderFailed, wantMessage: "SourceNotFound: "},
		{name: "cluster missing", targetErr: &cluster.Error{Reason: cluster.ReasonClusterNotFound, Message: "Cluster shop/east not found"},
			wantReason: cluster.ReasonClusterNotFound, wantMessage: "Cluster shop/east not found"},
		{name: "cluster unreachable while rendering", inputErr: refused,
			wantReason: compare.ReasonClusterUnreachable, wantMessage: "the cluster is unreachable (connection refused)"},
		{name: "inputs unavailable otherwise", inputErr: apierrors.NewForbidden(corev1.Resource("configmaps"), "web-manifests", errors.New("no")),
			wantReason: ReasonRenderFailed, wantMessage: "InputUnavailable: "},
		{name: "stored render asked for and missing", ref: "0123456789abcdef", wantErr: render.ErrNotStored},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(fakeInputs{err: tc.inputErr}, fakeStore{}, fakeTargets{err: tc.targetErr}, compare.NewEngine(nil, 1))
			release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
				Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web-manifests"}}}}
			report, err := c.Check(context.Background(), release, tc.ref)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, report.Result.Result)
			assert.Equal(t, tc.wantReason, report.Reason)
			assert.Contains(t, report.Message, tc.wantMessage)
			assert.Nil(t, report.Desired)
		})
	}
}
