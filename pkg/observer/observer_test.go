package observer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// The readyz check "observer": a replica that should run the loops is not
// ready until they run; one that does not lead is.
func TestReady(t *testing.T) {
	elected := New(Config{LeaderElection: componentbaseconfig.LeaderElectionConfiguration{LeaderElect: true}})
	assert.NoError(t, elected.Ready(), "a replica that does not lead serves the API")
	elected.setLeading(true)
	assert.ErrorContains(t, elected.Ready(), "not running")
	elected.running.Store(true)
	assert.NoError(t, elected.Ready())
	elected.running.Store(false)
	elected.setLeading(false)
	assert.NoError(t, elected.Ready())

	alone := New(Config{})
	assert.Error(t, alone.Ready(), "without leader election the loops must run")
	alone.running.Store(true)
	assert.NoError(t, alone.Ready())
}

// A panic in a pass ends that pass; the worker goes on with the next
// Release, and the panic is counted.
func TestPassQueueSurvivesAPanic(t *testing.T) {
	var passed []string
	q := newPassQueue("test", func(_ context.Context, key cache.ObjectName) (time.Duration, error) {
		if key.Name == "bad" {
			panic("injected panic")
		}
		passed = append(passed, key.Name)
		return 0, nil
	})
	defer q.queue.ShutDown()
	RegisterMetrics() // unregistered metrics count nothing
	before, _ := testutil.GetCounterMetricValue(panics.WithLabelValues("test"))
	q.queue.Add(cache.ObjectName{Namespace: "shop", Name: "bad"})
	q.queue.Add(cache.ObjectName{Namespace: "shop", Name: "good"})
	ctx := context.Background()
	assert.True(t, q.processNext(ctx))
	assert.True(t, q.processNext(ctx))
	assert.Equal(t, []string{"good"}, passed)
	after, _ := testutil.GetCounterMetricValue(panics.WithLabelValues("test"))
	assert.Equal(t, before+1, after)
	assert.Equal(t, 1, q.queue.NumRequeues(cache.ObjectName{Namespace: "shop", Name: "bad"}), "retried with backoff")
}

// A pass enqueued by an event reads through LISTs sent after the event; a
// pass that was only due (its interval, a re-check) shares any fresh LIST.
func TestPassAfterAnEventWantsANewerList(t *testing.T) {
	var got []time.Time
	q := newPassQueue("test", func(ctx context.Context, _ cache.ObjectName) (time.Duration, error) {
		got = append(got, cluster.ListedAfter(ctx))
		return 0, nil
	})
	defer q.queue.ShutDown()
	ctx := context.Background()
	release := &metav1.ObjectMeta{Namespace: "shop", Name: "web"}

	before := time.Now()
	q.enqueue(release)
	assert.True(t, q.processNext(ctx))
	q.queue.Add(cache.ObjectName{Namespace: "shop", Name: "web"}) // as AddAfter does when due
	assert.True(t, q.processNext(ctx))

	require.Len(t, got, 2)
	assert.False(t, got[0].Before(before), "after the event")
	assert.False(t, got[0].After(time.Now()))
	assert.True(t, got[1].IsZero(), "a pass that was only due has no event to follow")
}

// The retry of a failed pass that followed an event still follows it.
func TestRetryOfAPassAfterAnEventWantsANewerList(t *testing.T) {
	var got []time.Time
	q := newPassQueue("test", func(ctx context.Context, _ cache.ObjectName) (time.Duration, error) {
		got = append(got, cluster.ListedAfter(ctx))
		if len(got) == 1 {
			return 0, errors.New("the cluster did not answer")
		}
		return 0, nil
	})
	defer q.queue.ShutDown()
	ctx := context.Background()

	q.enqueue(&metav1.ObjectMeta{Namespace: "shop", Name: "web"})
	assert.True(t, q.processNext(ctx))
	assert.True(t, q.processNext(ctx)) // the retry, after its backoff

	require.Len(t, got, 2)
	assert.False(t, got[0].IsZero())
	assert.Equal(t, got[0], got[1], "the retry follows the same event")
}
