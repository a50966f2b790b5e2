package observer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
)

// healthLoopOn builds a health loop on informers of client (not started).
func healthLoopOn(t *testing.T, client *fake.Clientset) (*HealthLoop, convoyinformers.SharedInformerFactory, *health.Compiler) {
	t.Helper()
	factory := convoyinformers.NewSharedInformerFactory(client, 0)
	v1 := factory.Convoy().V1alpha1()
	compiler := health.NewCompiler(0)
	status := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clocktesting.NewFakePassiveClock(time.Now()))
	l, err := NewHealthLoop(HealthInformers{Releases: v1.Releases(), Inventories: v1.ReleaseInventories(),
		Globals: v1.GlobalHealthRuleSets(), Locals: v1.HealthRuleSets()}, nil, compiler, nil, inventory.NewWriter(client.ConvoyV1alpha1()), status, nil, clocktesting.NewFakePassiveClock(time.Now()))
	require.NoError(t, err)
	t.Cleanup(l.queue.ShutDown)
	return l, factory, compiler
}

func releaseSelecting(namespace, name string, global, local *convoyv1alpha1.LabelSelector) *convoyv1alpha1.Release {
	r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if global != nil || local != nil {
		r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{GlobalRuleSetSelector: global, LocalRuleSetSelector: local}
	}
	return r
}

// queued drains the queue and returns its keys.
func queued(q *passQueue) []string {
	var keys []string
	for q.queue.Len() > 0 {
		k, _ := q.queue.Get()
		keys = append(keys, k.String())
		q.queue.Done(k)
		q.queue.Forget(k)
	}
	return keys
}

// A rule-set change checks again only the Releases that select the set
// (before or after the change); a resync of the set checks none; a set
// whose rules changed, or that is gone, is forgotten by the compiler.
func TestRuleSetChangesReachOnlyTheReleasesThatSelectThem(t *testing.T) {
	l, factory, compiler := healthLoopOn(t, fake.NewClientset())
	team := &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	all := &convoyv1alpha1.LabelSelector{}
	for _, r := range []*convoyv1alpha1.Release{
		releaseSelecting("shop", "global-team", team, nil),
		releaseSelecting("shop", "local-all", nil, all),
		releaseSelecting("other", "local-all", nil, all),
		releaseSelecting("shop", "none", nil, nil),
		releaseSelecting("shop", "bad-selector", &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"not a key!": "x"}}, nil),
	} {
		require.NoError(t, factory.Convoy().V1alpha1().Releases().Informer().GetIndexer().Add(r))
	}
	handler := l.ruleSetHandler()

	global := &convoyv1alpha1.GlobalHealthRuleSet{ObjectMeta: metav1.ObjectMeta{Name: "g", UID: "uid-g", Generation: 1, ResourceVersion: "1",
		Labels: map[string]string{"team": "a"}}}
	handler.OnAdd(global, false)
	assert.ElementsMatch(t, []string{"shop/global-team", "shop/bad-selector"}, queued(&l.passQueue))

	relabeled := global.DeepCopy()
	relabeled.Labels, relabeled.ResourceVersion = map[string]string{"team": "b"}, "2"
	handler.OnUpdate(global, relabeled)
	assert.ElementsMatch(t, []string{"shop/global-team", "shop/bad-selector"}, queued(&l.passQueue), "selected before the change")
	handler.OnUpdate(relabeled, relabeled)
	assert.Empty(t, queued(&l.passQueue), "a resync changes nothing")

	local := &convoyv1alpha1.HealthRuleSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "l", UID: "uid-l", Generation: 1, ResourceVersion: "3"},
		Spec: convoyv1alpha1.HealthRuleSetSpec{Rules: []convoyv1alpha1.HealthRule{{APIVersion: "v1", Resources: []string{"*"}, Expression: "true"}}}}
	_, err := compiler.Compile([]health.RuleSet{{Kind: health.KindHealthRuleSet, Namespace: "shop", Name: "l", UID: "uid-l", Generation: 1, Rules: local.Spec.Rules}})
	require.NoError(t, err)
	require.Equal(t, 1, compiler.Cached())
	handler.OnAdd(local, false)
	assert.ElementsMatch(t, []string{"shop/local-all"}, queued(&l.passQueue), "a HealthRuleSet reaches its own namespace only")

	labelsOnly := local.DeepCopy()
	labelsOnly.Labels, labelsOnly.ResourceVersion = map[string]string{"x": "y"}, "4"
	handler.OnUpdate(local, labelsOnly)
	assert.Equal(t, 1, compiler.Cached(), "the rules did not change: the programs stay")
	newRules := labelsOnly.DeepCopy()
	newRules.Generation, newRules.ResourceVersion = 2, "5"
	handler.OnUpdate(labelsOnly, newRules)
	assert.Zero(t, compiler.Cached(), "the programs of the old generation are released")

	_, err = compiler.Compile([]health.RuleSet{{Kind: health.KindHealthRuleSet, Namespace: "shop", Name: "l", UID: "uid-l", Generation: 2, Rules: local.Spec.Rules}})
	require.NoError(t, err)
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "shop/l", Obj: newRules})
	assert.Zero(t, compiler.Cached(), "a deleted set is released")
	assert.ElementsMatch(t, []string{"shop/local-all"}, queued(&l.passQueue))
}

// What the loops keep of a Release (re-check delays, the observer's part of
// its status) is released when the Release is deleted.
func TestPerReleaseStateIsReleasedOnDelete(t *testing.T) {
	r := releaseSelecting("shop", "web", nil, nil)
	r.UID = "uid-web"
	client := fake.NewClientset(r)
	// The fake tracker keeps no history: a delete between the informer's LIST
	// and its WATCH would never reach the handlers, so the test deletes only
	// once the watch of Releases is open.
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("releases", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace(), action.(k8stesting.WatchActionImpl).ListOptions)
		if err != nil {
			return true, nil, err
		}
		once.Do(func() { close(watching) })
		return true, w, nil
	})
	l, factory, _ := healthLoopOn(t, client)
	drift, err := NewDriftLoop(factory.Convoy().V1alpha1().Releases(), factory.Convoy().V1alpha1().ReleaseInventories(), nil, l.status, nil, nil)
	require.NoError(t, err)
	t.Cleanup(drift.queue.ShutDown)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	key := cache.ObjectName{Namespace: "shop", Name: "web"}
	l.nextDelay(key, false, time.Hour)
	l.status.part(r)
	<-watching
	require.NoError(t, client.ConvoyV1alpha1().Releases("shop").Delete(ctx, "web", metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		_, delayed := l.delays[key]
		l.mu.Unlock()
		l.status.mu.Lock()
		_, kept := l.status.parts[r.UID]
		l.status.mu.Unlock()
		return !delayed && !kept, nil
	})
	assert.NoError(t, err, "the delays and the status part of a deleted Release are gone")
}
