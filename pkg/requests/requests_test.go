package requests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
)

func TestRequest(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{
		Name: "web", Namespace: "shop", Annotations: map[string]string{"keep": "me"},
	}}
	client := fake.NewClientset(release)
	recorder := events.NewFakeRecorder(10)
	r := NewRequester(client.ConvoyV1alpha1(), recorder, clocktesting.NewFakePassiveClock(now))

	at, err := r.Request(context.Background(), "shop", "web", "alice", "")
	require.NoError(t, err)
	assert.Equal(t, now.Truncate(time.Microsecond), at.Time.Truncate(time.Microsecond))

	got, err := client.ConvoyV1alpha1().Releases("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2026-11-30T10:00:00.123456Z", got.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt])
	assert.Equal(t, "me", got.Annotations["keep"], "other annotations stay")
	recorded, err := time.Parse(time.RFC3339Nano, got.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt])
	require.NoError(t, err, "the annotation is an RFC 3339 time")
	assert.Equal(t, now.Truncate(time.Microsecond), recorded)

	require.Len(t, recorder.Events, 1)
	assert.Equal(t, "Normal SyncRequested Sync requested by alice", <-recorder.Events)

	_, err = r.Request(context.Background(), "shop", "web", "convoy-observe", "drift found")
	require.NoError(t, err)
	assert.Equal(t, "Normal SyncRequested Sync requested by convoy-observe: drift found", <-recorder.Events)
}

func TestRequestMissingRelease(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	r := NewRequester(fake.NewClientset().ConvoyV1alpha1(), recorder, clocktesting.NewFakePassiveClock(time.Now()))
	_, err := r.Request(context.Background(), "shop", "nope", "alice", "")
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err), "NotFound is kept: %v", err)
	assert.Contains(t, err.Error(), "shop/nope")
	assert.Empty(t, recorder.Events, "no event for a request that was not recorded")
}

// A note with many reasons is cut to what events.k8s.io accepts (1 KiB), so
// the Event is recorded.
func TestRequestNoteIsTruncated(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	recorder := events.NewFakeRecorder(1)
	r := NewRequester(fake.NewClientset(release).ConvoyV1alpha1(), recorder, clocktesting.NewFakePassiveClock(time.Now()))
	_, err := r.Request(context.Background(), "shop", "web", "convoy-observe", strings.Repeat("hook Job.batch shop/ünïcode-migrate succeeded; ", 100))
	require.NoError(t, err)
	note := strings.TrimPrefix(<-recorder.Events, "Normal SyncRequested ")
	assert.LessOrEqual(t, len(note), 1024)
	assert.True(t, utf8.ValidString(note))
	assert.Contains(t, note, "truncated]")
}

// Refresh requests of a Release within RefreshJoin of the one recorded
// join it: one patch and one Event, the same time; later, and for another
// Release, a new one.
func TestRefreshJoinsWithinASecond(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	client := fake.NewClientset(
		&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}},
		&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"}})
	patches := map[string]int{}
	client.PrependReactor("patch", "releases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patches[a.(clienttesting.PatchAction).GetName()]++
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(now)
	recorder := events.NewFakeRecorder(1000)
	r := NewRequester(client.ConvoyV1alpha1(), recorder, clk)
	ctx := context.Background()

	first, err := r.Refresh(ctx, "shop", "web", "alice")
	require.NoError(t, err)
	for range 50 {
		clk.SetTime(clk.Now().Add(10 * time.Millisecond))
		at, err := r.Refresh(ctx, "shop", "web", "bob")
		require.NoError(t, err)
		if clk.Since(first.Time) < RefreshJoin {
			assert.True(t, first.Equal(&at), "joined: %s", at)
		}
	}
	assert.Equal(t, 1, patches["web"], "one patch within the second")
	assert.Len(t, recorder.Events, 1, "one Event, naming alice")

	clk.SetTime(first.Add(RefreshJoin))
	later, err := r.Refresh(ctx, "shop", "web", "bob")
	require.NoError(t, err)
	assert.True(t, later.After(first.Time))
	assert.Equal(t, 2, patches["web"], "a second later: a new request")
	_, err = r.Refresh(ctx, "shop", "api", "bob")
	require.NoError(t, err)
	assert.Equal(t, 1, patches["api"], "another Release is not joined")

	// The memory holds only the last second's requests.
	for i := range 500 {
		clk.SetTime(clk.Now().Add(10 * time.Millisecond))
		name := fmt.Sprintf("r%d", i)
		require.NoError(t, client.Tracker().Add(&convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}))
		_, err := r.Refresh(ctx, "shop", name, "bob")
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(r.refreshes.recorded), 2*100+64, "about the requests of the last second")
}
