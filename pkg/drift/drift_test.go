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

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

type fakeRenderer struct{ err error }

func (f fakeRenderer) Render(context.Context, *convoyv1alpha1.Release) (*render.Render, error) {
	return nil, f.err
}

type fakeStore struct{}

func (fakeStore) Get(_ context.Context, _, _, ref string) (*render.Render, error) {
	return nil, fmt.Errorf("%s: %w", ref, render.ErrNotStored)
}

type fakeTargets struct{ err error }

func (f fakeTargets) ForRelease(context.Context, *convoyv1alpha1.Release) (*cluster.Target, error) {
	return nil, f.err
}

// The failures found before the compare become Undetermined reports with a
// reason, as the InSync condition shows them.
func TestCheckFailuresBeforeTheCompare(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		name        string
		renderErr   error
		targetErr   error
		ref         string
		wantReason  string
		wantMessage string
		wantErr     error
	}{
		{name: "render fails", renderErr: &render.Error{Reason: render.ReasonSourceNotFound, Message: "source ConfigMap shop/x not found"},
			wantReason: ReasonRenderFailed, wantMessage: "SourceNotFound: source ConfigMap shop/x not found"},
		{name: "cluster missing while rendering", renderErr: &cluster.Error{Reason: cluster.ReasonClusterNotFound, Message: "Cluster shop/east not found"},
			wantReason: cluster.ReasonClusterNotFound, wantMessage: "Cluster shop/east not found"},
		{name: "cluster unreachable while rendering", renderErr: &render.Error{Reason: render.ReasonInputUnavailable, Message: "scope of v1 ConfigMap: dial", Err: refused},
			wantReason: compare.ReasonClusterUnreachable, wantMessage: "the cluster is unreachable (connection refused)"},
		{name: "inputs unavailable otherwise", renderErr: &render.Error{Reason: render.ReasonInputUnavailable, Message: "forbidden", Err: errors.New("forbidden")},
			wantReason: ReasonRenderFailed, wantMessage: "InputUnavailable: forbidden"},
		{name: "stored render asked for and missing", ref: "0123456789abcdef", wantErr: render.ErrNotStored},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(desired.NewResolver(fakeRenderer{err: tc.renderErr}, fakeStore{}), fakeTargets{err: tc.targetErr}, compare.NewEngine(nil, 1))
			report, err := c.Check(context.Background(), &convoyv1alpha1.Release{}, tc.ref)
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
