package release

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// A GET whose namespace, ?render= or options cannot be right is a 400
// before anything is read: the storages are built without a client or a
// checker here, which a read would need.
func TestGetRefusesMalformedRequests(t *testing.T) {
	inShop := genericapirequest.WithNamespace(context.Background(), "shop")
	get := map[string]func(ctx context.Context, options runtime.Object) (runtime.Object, error){
		"diff": func(ctx context.Context, o runtime.Object) (runtime.Object, error) {
			return NewDiffREST(nil, nil).Get(ctx, "web", o)
		},
		"preview": func(ctx context.Context, o runtime.Object) (runtime.Object, error) {
			return NewPreviewREST(nil, nil, nil).Get(ctx, "web", o)
		},
		"health": func(ctx context.Context, _ runtime.Object) (runtime.Object, error) {
			return NewHealthREST(nil, nil).Get(ctx, "web", &metav1.GetOptions{})
		},
	}
	tests := []struct {
		name     string
		storages []string
		ctx      context.Context
		options  runtime.Object
		message  string
	}{
		{name: "no namespace", storages: []string{"diff", "preview", "health"}, ctx: context.Background(),
			options: &subresourcesv1alpha1.ReleaseRenderOptions{}, message: "a namespace is required"},
		{name: "a render that is not a renderRef", storages: []string{"diff", "preview"}, ctx: inShop,
			options: &subresourcesv1alpha1.ReleaseRenderOptions{Render: "../etc"}, message: `render="../etc" is not a renderRef (16 lower-case hex digits)`},
		{name: "a renderRef in upper case", storages: []string{"diff", "preview"}, ctx: inShop,
			options: &subresourcesv1alpha1.ReleaseRenderOptions{Render: "0123456789ABCDEF"}, message: "is not a renderRef"},
		{name: "a render and a revision", storages: []string{"diff", "preview"}, ctx: inShop,
			options: &subresourcesv1alpha1.ReleaseRenderOptions{Render: "0123456789abcdef", Revision: "main"}, message: "render and revision cannot both be asked for"},
		{name: "a revision with white space", storages: []string{"diff", "preview"}, ctx: inShop,
			options: &subresourcesv1alpha1.ReleaseRenderOptions{Revision: "main --upload-pack=x"}, message: "is not a revision: 1 to 255 characters, no white space"},
		{name: "a revision too long", storages: []string{"diff", "preview"}, ctx: inShop,
			options: &subresourcesv1alpha1.ReleaseRenderOptions{Revision: strings.Repeat("a", 256)}, message: "is not a revision"},
		{name: "other options", storages: []string{"diff", "preview"}, ctx: inShop,
			options: &metav1.GetOptions{}, message: "unexpected options *v1.GetOptions"},
	}
	for _, tc := range tests {
		for _, storage := range tc.storages {
			t.Run(tc.name+"/"+storage, func(t *testing.T) {
				_, err := get[storage](tc.ctx, tc.options)
				require.Error(t, err)
				assert.True(t, apierrors.IsBadRequest(err), "%v", err)
				assert.Contains(t, err.Error(), tc.message)
			})
		}
	}
}

// A panic of a handler is a 500 for the client, which names it, not a
// connection the aggregator sees aborted.
func TestRecoverAsInternalError(t *testing.T) {
	handler := func() (err error) {
		defer recoverAsInternalError(context.Background(), &err)
		panic("boom")
	}
	err := handler()
	require.Error(t, err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, int32(http.StatusInternalServerError), status.Status().Code)
	assert.Contains(t, err.Error(), "boom")

	calm := func() (err error) {
		defer recoverAsInternalError(context.Background(), &err)
		return nil
	}
	assert.NoError(t, calm(), "no panic, no error")
}

// The subresources that take ?render= decode it into ReleaseRenderOptions;
// each storage answers its own kind.
func TestStorageKinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		storage interface {
			New() runtime.Object
			NamespaceScoped() bool
		}
		want    runtime.Object
		options bool
	}{
		{name: "diff", storage: NewDiffREST(nil, nil), want: &subresourcesv1alpha1.ReleaseDiff{}, options: true},
		{name: "preview", storage: NewPreviewREST(nil, nil, nil), want: &subresourcesv1alpha1.ReleasePreview{}, options: true},
		{name: "health", storage: NewHealthREST(nil, nil), want: &subresourcesv1alpha1.ReleaseHealth{}},
		{name: "sync", storage: NewSyncREST(nil), want: &subresourcesv1alpha1.ReleaseSync{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.IsType(t, tc.want, tc.storage.New())
			assert.True(t, tc.storage.NamespaceScoped())
			withOptions, ok := tc.storage.(interface {
				NewGetOptions() (runtime.Object, bool, string)
			})
			require.Equal(t, tc.options, ok)
			if ok {
				options, decodes, _ := withOptions.NewGetOptions()
				assert.IsType(t, &subresourcesv1alpha1.ReleaseRenderOptions{}, options)
				assert.False(t, decodes, "query parameters, not a path")
			}
		})
	}
}
