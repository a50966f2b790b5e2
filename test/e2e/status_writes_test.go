package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// statusWrites counts, from a watch of a namespace's Releases, the writes
// that left a Release's generation as it was: the status writes (in a
// namespace where the controller's stand-in writes no status, the
// observer's).
type statusWrites struct {
	mu     sync.Mutex
	gen    map[string]int64
	writes map[string]int
}

func watchStatusWrites(t *testing.T, namespace string) *statusWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	list, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	s := &statusWrites{gen: map[string]int64{}, writes: map[string]int{}}
	for _, r := range list.Items {
		s.gen[r.Name] = r.Generation
	}
	w, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	go func() {
		for e := range w.ResultChan() {
			r, ok := e.Object.(*convoyv1alpha1.Release)
			if !ok || e.Type != watch.Modified {
				continue
			}
			s.mu.Lock()
			if r.Generation == s.gen[r.Name] {
				s.writes[r.Name]++
			}
			s.gen[r.Name] = r.Generation
			s.mu.Unlock()
		}
	}()
	return s
}

// take returns the writes counted since the last take, and starts again.
func (s *statusWrites) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.writes
	s.writes = map[string]int{}
	return out
}

// waitBothObserved waits until both conditions of every Release named have
// observedGeneration generation, with InSync's reason inSync, and returns
// their Healthy reasons.
func waitBothObserved(t *testing.T, namespace string, names []string, generation int64, inSync string) map[string]string {
	t.Helper()
	healthy := map[string]string{}
	eventually(t, fmt.Sprintf("both conditions of %d Releases at generation %d", len(names), generation), func(ctx context.Context) error {
		for _, name := range names {
			r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, typ := range []string{convoyv1alpha1.ConditionInSync, convoyv1alpha1.ConditionHealthy} {
				c := apimeta.FindStatusCondition(r.Status.Conditions, typ)
				if c == nil || c.ObservedGeneration != generation {
					return fmt.Errorf("%s: %s %+v", name, typ, c)
				}
			}
			if c := apimeta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync); c.Reason != inSync {
				return fmt.Errorf("%s: InSync %s, not %s", name, c.Reason, inSync)
			}
			healthy[name] = apimeta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy).Reason
		}
		return nil
	})
	return healthy
}

// One status write per Release per spec change (issue 63): after a change
// of spec.syncPolicy.interval, which moves neither verdict, both conditions
// reach the new generation in one write of releases/status per Release,
// counted from a watch of the namespace; the verdicts stay what they were.
// Two changes in a row end with both conditions at the last generation.
// A change that makes the Releases drift is written at once (a verdict is
// never held).
func TestOneStatusWritePerSpecChange(t *testing.T) {
	// Not parallel: the drift loop's queue is shared with the other tests,
	// and the counts below want each pass of these Releases to follow its
	// change within the hold.
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	const n = 10
	var names []string
	for i := range n {
		name := fmt.Sprintf("web-%d", i)
		names = append(names, name)
		newDriftRelease(t, ns, name, map[string]string{"config.yaml": fmt.Sprintf(configMapManifest, "blue")}, every(time.Hour))
		standIn.apply(ns, name)
	}
	healthy := waitBothObserved(t, ns, names, 1, "InSync")
	time.Sleep(2 * time.Second) // the first writes settle
	writes := watchStatusWrites(t, ns)

	setInterval := func(name string, d time.Duration) int64 {
		patch := fmt.Sprintf(`{"spec":{"syncPolicy":{"interval":%q}}}`, d)
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
		return r.Generation
	}

	t.Run("one change", func(t *testing.T) {
		for _, name := range names {
			require.Equal(t, int64(2), setInterval(name, 2*time.Hour))
		}
		assert.Equal(t, healthy, waitBothObserved(t, ns, names, 2, "InSync"), "the verdicts did not move")
		time.Sleep(2 * time.Second) // no write comes after
		got := writes.take()
		for _, name := range names {
			assert.Equal(t, 1, got[name], "status writes of %s for one spec change", name)
		}
	})

	t.Run("two changes in a row", func(t *testing.T) {
		for _, name := range names {
			setInterval(name, 3*time.Hour)
			require.Equal(t, int64(4), setInterval(name, 4*time.Hour))
		}
		assert.Equal(t, healthy, waitBothObserved(t, ns, names, 4, "InSync"))
		time.Sleep(2 * time.Second)
		got := writes.take()
		for _, name := range names {
			assert.LessOrEqual(t, got[name], 2, "status writes of %s for two spec changes", name)
			assert.Positive(t, got[name], name)
		}
	})

	t.Run("a verdict is written at once", func(t *testing.T) {
		name := names[0]
		setManifests(t, ns, name, map[string]string{"config.yaml": fmt.Sprintf(configMapManifest, "green")})
		// A pass that follows a new spec shares a fresh LIST of the
		// namespace's ConfigMaps, which may predate the change above (the
		// trade of docs/contributors/internals.md, "Fleet scale"): the
		// spec changes once the LISTs from before are past.
		pastTheLists()
		gen := setInterval(name, 5*time.Hour)
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := apimeta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
			return c != nil && c.ObservedGeneration == gen && c.Reason == "Drifted", nil
		})
		require.NoError(t, err, "Drifted at generation %d", gen)
		time.Sleep(2 * time.Second)
		got := writes.take()
		assert.GreaterOrEqual(t, got[name], 1)
		assert.LessOrEqual(t, got[name], 2, "Drifted at once, and Healthy's generation with it or after")
	})
}
