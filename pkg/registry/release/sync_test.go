package release

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

func TestSyncCreate(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	newStorage := func() *RequestREST {
		client := fake.NewClientset(&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}})
		return NewSyncREST(requests.NewRequester(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clocktesting.NewFakePassiveClock(now)))
	}
	alice := &user.DefaultInfo{Name: "alice"}
	inShop := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "shop"), alice)

	cases := []struct {
		name       string
		ctx        context.Context
		release    string
		body       runtime.Object
		validation func(context.Context, runtime.Object) error
		wantErr    func(error) bool
	}{
		{name: "records", ctx: inShop, release: "web", body: &subresourcesv1alpha1.ReleaseSync{}},
		{name: "body names the release", ctx: inShop, release: "web",
			body: &subresourcesv1alpha1.ReleaseSync{ObjectMeta: metav1.ObjectMeta{Name: "web"}}},
		{name: "body names another release", ctx: inShop, release: "web",
			body: &subresourcesv1alpha1.ReleaseSync{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, wantErr: apierrors.IsBadRequest},
		{name: "wrong type", ctx: inShop, release: "web", body: &subresourcesv1alpha1.ReleaseDiff{}, wantErr: apierrors.IsBadRequest},
		{name: "no namespace", ctx: genericapirequest.WithUser(context.Background(), alice), release: "web",
			body: &subresourcesv1alpha1.ReleaseSync{}, wantErr: apierrors.IsBadRequest},
		{name: "unknown release", ctx: inShop, release: "nope", body: &subresourcesv1alpha1.ReleaseSync{}, wantErr: apierrors.IsNotFound},
		{name: "admission refuses", ctx: inShop, release: "web", body: &subresourcesv1alpha1.ReleaseSync{},
			validation: func(context.Context, runtime.Object) error {
				return apierrors.NewForbidden(subresourcesv1alpha1.Resource("releases"), "web", nil)
			},
			wantErr: apierrors.IsForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newStorage().Create(tc.ctx, tc.release, tc.body, tc.validation, &metav1.CreateOptions{})
			if tc.wantErr != nil {
				require.Error(t, err)
				assert.True(t, tc.wantErr(err), "unexpected error: %v", err)
				return
			}
			require.NoError(t, err)
			sync := got.(*subresourcesv1alpha1.ReleaseSync)
			assert.Equal(t, "web", sync.Name)
			assert.Equal(t, "shop", sync.Namespace)
			assert.Equal(t, "alice", sync.RequestedBy)
			require.NotNil(t, sync.RequestedAt)
			assert.True(t, now.Equal(sync.RequestedAt.Time))
		})
	}
}

// POST refresh records the refresh annotation and answers a
// ReleaseRefresh; a ReleaseSync body is refused.
func TestRefreshCreate(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	client := fake.NewClientset(&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}})
	storage := NewRefreshREST(requests.NewRequester(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clocktesting.NewFakePassiveClock(now)))
	ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "shop"), &user.DefaultInfo{Name: "alice"})
	assert.IsType(t, &subresourcesv1alpha1.ReleaseRefresh{}, storage.New())

	got, err := storage.Create(ctx, "web", &subresourcesv1alpha1.ReleaseRefresh{}, nil, &metav1.CreateOptions{})
	require.NoError(t, err)
	refresh := got.(*subresourcesv1alpha1.ReleaseRefresh)
	assert.Equal(t, "alice", refresh.RequestedBy)
	require.NotNil(t, refresh.RequestedAt)
	assert.True(t, now.Equal(refresh.RequestedAt.Time))
	release, err := client.ConvoyV1alpha1().Releases("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2026-12-04T10:00:00.000000Z", release.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt])
	assert.Empty(t, release.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt], "a refresh is no sync")

	_, err = storage.Create(ctx, "web", &subresourcesv1alpha1.ReleaseSync{}, nil, &metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	_, err = storage.Create(ctx, "nope", &subresourcesv1alpha1.ReleaseRefresh{}, nil, &metav1.CreateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestUnknownReleaseNamesTheAggregatedResource(t *testing.T) {
	storage := NewSyncREST(requests.NewRequester(fake.NewClientset().ConvoyV1alpha1(), events.NewFakeRecorder(1), clocktesting.NewFakePassiveClock(time.Now())))
	ctx := genericapirequest.WithNamespace(context.Background(), "shop")
	_, err := storage.Create(ctx, "nope", &subresourcesv1alpha1.ReleaseSync{}, nil, &metav1.CreateOptions{})
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, subresourcesv1alpha1.GroupName, status.Status().Details.Group)
	assert.Equal(t, "releases", status.Status().Details.Kind)
	assert.Equal(t, "nope", status.Status().Details.Name)
}

func TestSyncTable(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 30, 10, 0, 0, 5000, time.UTC))
	table, err := NewSyncREST(nil).ConvertToTable(context.Background(), &subresourcesv1alpha1.ReleaseSync{
		ObjectMeta: metav1.ObjectMeta{Name: "web"}, RequestedAt: &at, RequestedBy: "alice",
	}, nil)
	require.NoError(t, err)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []any{"web", "2026-11-30T10:00:00.000005Z", "alice"}, table.Rows[0].Cells)
	assert.Len(t, table.ColumnDefinitions, 3)

	_, err = NewSyncREST(nil).ConvertToTable(context.Background(), &subresourcesv1alpha1.ReleaseDiff{}, nil)
	assert.Error(t, err)
}

func TestStorageLayout(t *testing.T) {
	storage := Storage(Engines{})
	assert.ElementsMatch(t, []string{"releases", "releases/diff", "releases/health", "releases/preview", "releases/sync", "releases/refresh"}, keys(storage))
	parent := storage["releases"].(*REST)
	assert.True(t, parent.NamespaceScoped())
	assert.Equal(t, "release", parent.GetSingularName())
	assert.IsType(t, &subresourcesv1alpha1.Release{}, parent.New())
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
