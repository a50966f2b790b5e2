package cmd

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func TestReleaseWaitState(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: gen, Message: "m"}
	}
	release := func(rollout *convoyv1alpha1.RolloutStatus, conds ...metav1.Condition) *convoyv1alpha1.Release {
		r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		r.Status.Conditions, r.Status.Rollout = conds, rollout
		return r
	}
	inSync := cond(convoyv1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", 2)
	drifted := cond(convoyv1alpha1.ConditionInSync, metav1.ConditionFalse, "Drifted", 2)
	staleInSync := cond(convoyv1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", 1)
	healthy := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionTrue, "Healthy", 2)
	notConfigured := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionTrue, "NotConfigured", 2)
	progressing := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Progressing", 2)
	degraded := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Degraded", 2)
	staleDegraded := cond(convoyv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Degraded", 1)
	complete := &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutComplete}
	holding := &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutHolding}

	cases := []struct {
		name     string
		release  *convoyv1alpha1.Release
		what     string
		reached  bool
		degraded bool
		why      string
	}{
		{"nothing reported", release(nil), forInSync, false, false, "InSync is not reported yet"},
		{"in sync", release(nil, inSync), forInSync, true, false, ""},
		{"drifted", release(nil, drifted), forInSync, false, false, "InSync is False (Drifted): m"},
		{"in sync for an older spec", release(nil, staleInSync), forInSync, false, false, "InSync is for generation 1, the Release is at 2"},
		{"degraded does not end insync", release(nil, drifted, degraded), forInSync, false, false, "InSync is False (Drifted): m"},
		{"healthy", release(nil, healthy), forHealthy, true, false, ""},
		{"not configured counts as healthy", release(nil, notConfigured), forHealthy, true, false, ""},
		{"progressing", release(nil, progressing), forHealthy, false, false, "Healthy is False (Progressing): m"},
		{"degraded ends healthy", release(nil, degraded), forHealthy, false, true, "m"},
		{"degraded for an older spec waits", release(nil, staleDegraded), forHealthy, false, false, "Healthy is for generation 1, the Release is at 2"},
		{"synced", release(complete, inSync, healthy), forSynced, true, false, ""},
		{"synced without a rollout", release(nil, inSync, healthy), forSynced, true, false, ""},
		{"synced waits for the rollout", release(holding, inSync, healthy), forSynced, false, false, "the rollout is Holding"},
		{"synced waits for InSync", release(complete, drifted, healthy), forSynced, false, false, "InSync is False (Drifted): m"},
		{"synced ends on Degraded", release(complete, inSync, degraded), forSynced, false, true, "m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := releaseWaitState(tc.release, tc.what)
			assert.Equal(t, tc.reached, s.reached)
			assert.Equal(t, tc.degraded, s.degraded)
			assert.Equal(t, tc.why, s.why)
		})
	}
}

// A read refused past the deadline is the timeout, whether or not the
// context is done yet.
func TestPastDeadline(t *testing.T) {
	future, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancelPast()
	for name, tc := range map[string]struct {
		ctx  context.Context
		want bool
	}{
		"no deadline": {context.Background(), false},
		"before it":   {future, false},
		"past it":     {past, true},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, pastDeadline(tc.ctx))
		})
	}
}

// release wait and release refresh --wait poll the Release alike: a failed
// read is tried again until the timeout and named in it, a Release that is
// gone or may not be read ends the wait at once, a timeout of 0 reads once.
func TestPollRelease(t *testing.T) {
	previous := waitPoll
	waitPoll = time.Millisecond
	t.Cleanup(func() { waitPoll = previous })
	release := func(generation int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(convoyv1alpha1.SchemeGroupVersion.String())
		u.SetKind("Release")
		u.SetNamespace("shop")
		u.SetName("web")
		u.SetGeneration(generation)
		return u
	}
	unavailable := apierrors.NewServiceUnavailable("etcd is down")
	notFound := apierrors.NewNotFound(releasesGVR.GroupResource(), "web")
	type read struct {
		obj *unstructured.Unstructured
		err error
	}
	tests := []struct {
		name    string
		reads   []read // the last one answers every read after it
		timeout time.Duration
		err     error
		readErr error
		n       int32 // reads sent; 0: at least len(reads)
	}{
		{name: "reached after a failed read and one not yet", timeout: time.Minute,
			reads: []read{{err: unavailable}, {obj: release(1)}, {obj: release(2)}}, n: 3},
		{name: "gone: at once", timeout: time.Minute, reads: []read{{err: notFound}}, err: notFound, n: 1},
		{name: "failed reads until the timeout", timeout: 50 * time.Millisecond,
			reads: []read{{obj: release(1)}, {err: unavailable}}, err: errTimedOut, readErr: unavailable},
		{name: "not yet until the timeout, a failed read before", timeout: 50 * time.Millisecond,
			reads: []read{{err: unavailable}, {obj: release(1)}}, err: errTimedOut},
		{name: "a timeout of 0 reads once", reads: []read{{obj: release(1)}}, err: errTimedOut, n: 1},
		{name: "a timeout of 0, reached", reads: []read{{obj: release(2)}}, n: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			var n atomic.Int32
			client.PrependReactor("get", "releases", func(clienttesting.Action) (bool, runtime.Object, error) {
				r := tc.reads[min(int(n.Add(1)), len(tc.reads))-1]
				if r.err != nil {
					return true, nil, r.err
				}
				return true, r.obj, nil
			})
			readErr, err := pollRelease(context.Background(), client.Resource(releasesGVR).Namespace("shop"), "web", tc.timeout,
				func(r *convoyv1alpha1.Release) bool { return r.Generation >= 2 })
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
			assert.Equal(t, tc.readErr, readErr)
			if tc.n > 0 {
				assert.Equal(t, tc.n, n.Load())
			} else {
				assert.GreaterOrEqual(t, n.Load(), int32(len(tc.reads)))
			}
		})
	}
}
