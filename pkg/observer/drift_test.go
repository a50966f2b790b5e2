package observer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

func TestInterval(t *testing.T) {
	r := &convoyv1alpha1.Release{}
	assert.Equal(t, DefaultInterval, Interval(r))
	r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: time.Minute}
	assert.Equal(t, time.Minute, Interval(r))
}

// fixedChecker reports the same drift check every pass.
type fixedChecker struct{ report *drift.Report }

func (c fixedChecker) Check(context.Context, *convoyv1alpha1.Release, drift.Options) (*drift.Report, error) {
	return c.report, nil
}

// A status write that fails keeps neither the verdict's sync request
// back (automatic mode) nor a refresh request from being handled: the
// pass requests the sync, then returns the write's error for a retry.
func TestDriftPassRequestsSyncWhenTheStatusWriteFails(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1,
		Annotations: map[string]string{convoyv1alpha1.AnnotationRefreshRequestedAt: strings.Repeat("x", 65)}}}
	release.Spec.SyncPolicy.Automatic = &convoyv1alpha1.AutomaticSync{}
	client := fake.NewClientset(release)
	client.PrependReactor("patch", "releases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Now())
	status := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clk)
	requester := requests.NewRequester(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clk)
	report := &drift.Report{Result: &compare.Result{Verdict: subresourcesv1alpha1.DiffDrifted, Reason: compare.ReasonDrifted, Message: "1 of 1 drifted"}}
	l := &DriftLoop{checker: fixedChecker{report}, status: status, requester: requester}

	_, err := l.pass(context.Background(), release, passOptions{})
	require.Error(t, err, "the write's error, for a retry")
	assert.Contains(t, err.Error(), "etcd is away")
	got, err := client.ConvoyV1alpha1().Releases("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, got.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt], "the sync was requested")
	assert.Equal(t, strings.Repeat("x", 65), status.SeenRefresh(release), "the refresh was handled")
}
