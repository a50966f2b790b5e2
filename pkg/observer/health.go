package observer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions/convoy/v1alpha1"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

// Re-check delays of the health loop while something is not Healthy: 2s,
// doubling up to 32s, never past spec.syncPolicy.interval.
const (
	minHealthDelay = 2 * time.Second
	maxHealthDelay = 32 * time.Second
)

// HealthInformers are the informers the health loop reads.
type HealthInformers struct {
	Releases    convoyinformers.ReleaseInformer
	Inventories convoyinformers.ReleaseInventoryInformer
	Globals     convoyinformers.GlobalHealthRuleSetInformer
	Locals      convoyinformers.HealthRuleSetInformer
}

// HealthLoop runs health passes, one at a time per Release: it reads the
// ReleaseInventory, assesses each resource on the target cluster with the
// selected CEL rules, writes the states to the inventory's status.entries and
// the Healthy condition and healthSummary on the Release.
type HealthLoop struct {
	passQueue
	releases    convoylisters.ReleaseLister
	inventories convoylisters.ReleaseInventoryLister
	globals     convoylisters.GlobalHealthRuleSetLister
	locals      convoylisters.HealthRuleSetLister
	targets     cluster.Targets
	compiler    *health.Compiler
	writer      *inventory.Writer
	status      *StatusWriter
	requester   *requests.Requester
	clock       clock.PassiveClock
	// verdicts, when set, reuses verdicts of unchanged objects, whose
	// resourceVersions shared LISTs tell.
	verdicts *health.VerdictCache

	mu     sync.Mutex
	delays map[cache.ObjectName]time.Duration
}

// NewHealthLoop returns a HealthLoop. Its passes start on: a Release created,
// its spec or status.lastAttempted changed; its inventory's spec changed; a
// change of a rule set it selects; the informer resync; and the re-check
// delays.
func NewHealthLoop(inf HealthInformers, targets cluster.Targets, compiler *health.Compiler, verdicts *health.VerdictCache, writer *inventory.Writer,
	status *StatusWriter, requester *requests.Requester, clk clock.PassiveClock) (*HealthLoop, error) {
	l := &HealthLoop{
		releases:    inf.Releases.Lister(),
		inventories: inf.Inventories.Lister(),
		globals:     inf.Globals.Lister(),
		locals:      inf.Locals.Lister(),
		targets:     targets,
		compiler:    compiler,
		writer:      writer,
		status:      status,
		requester:   requester,
		clock:       clk,
		verdicts:    verdicts,
		delays:      map[cache.ObjectName]time.Duration{},
	}
	l.passQueue = newPassQueue("health", l.releases, l.pass, inf.Releases.Informer().HasSynced, inf.Inventories.Informer().HasSynced,
		inf.Globals.Informer().HasSynced, inf.Locals.Informer().HasSynced)
	l.passQueue.forget = l.forget
	handlers := []struct {
		informer cache.SharedIndexInformer
		funcs    cache.ResourceEventHandlerFuncs
	}{
		{inf.Releases.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: l.enqueue,
			UpdateFunc: func(oldObj, newObj any) {
				cur := newObj.(*convoyv1alpha1.Release)
				l.add(cur, healthTrigger(oldObj.(*convoyv1alpha1.Release), cur))
			},
			DeleteFunc: func(obj any) {
				if r, ok := releaseOf(obj); ok {
					l.forget(cache.ObjectName{Namespace: r.Namespace, Name: r.Name})
				}
			},
		}},
		{inf.Inventories.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: l.enqueue,
			UpdateFunc: func(oldObj, newObj any) {
				// Our own status.entries writes do not change the generation.
				if oldObj.(*convoyv1alpha1.ReleaseInventory).Generation != newObj.(*convoyv1alpha1.ReleaseInventory).Generation {
					l.enqueue(newObj)
				}
			},
		}},
		{inf.Globals.Informer(), l.ruleSetHandler()},
		{inf.Locals.Informer(), l.ruleSetHandler()},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.funcs); err != nil {
			return nil, fmt.Errorf("adding an event handler: %w", err)
		}
	}
	return l, nil
}

func equalRecord(a, b *convoyv1alpha1.RenderRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.RenderRef == b.RenderRef
}

// ruleSetHandler checks again the Releases that select a rule set, with its
// labels before or after, when it is created, changed or deleted, and
// releases the compiled programs of a set whose rules changed or that is
// gone. The informer's resync of rule sets (nothing changed) starts nothing.
func (l *HealthLoop) ruleSetHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: l.enqueueSelecting,
		UpdateFunc: func(oldObj, newObj any) {
			old, oldOK := oldObj.(metav1.Object)
			cur, curOK := newObj.(metav1.Object)
			if !oldOK || !curOK || old.GetResourceVersion() == cur.GetResourceVersion() {
				return
			}
			if old.GetGeneration() != cur.GetGeneration() {
				l.compiler.Forget(old.GetUID())
			}
			l.enqueueSelecting(oldObj)
			l.enqueueSelecting(newObj)
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if set, ok := obj.(metav1.Object); ok {
				l.compiler.Forget(set.GetUID())
			}
			l.enqueueSelecting(obj)
		},
	}
}

// enqueueSelecting enqueues the Releases whose spec.healthAssessment selects
// the rule set obj (a GlobalHealthRuleSet, or a HealthRuleSet of their
// namespace). A Release whose selector is not valid is enqueued too: it is
// Cannot assess either way, and a pass tells.
func (l *HealthLoop) enqueueSelecting(obj any) {
	var (
		releases []*convoyv1alpha1.Release
		err      error
		set      labels.Set
		selector func(*convoyv1alpha1.HealthAssessment) *convoyv1alpha1.LabelSelector
	)
	switch s := obj.(type) {
	case *convoyv1alpha1.GlobalHealthRuleSet:
		set, selector = s.Labels, func(ha *convoyv1alpha1.HealthAssessment) *convoyv1alpha1.LabelSelector {
			return ha.GlobalRuleSetSelector
		}
		releases, err = l.releases.List(labels.Everything())
	case *convoyv1alpha1.HealthRuleSet:
		set, selector = s.Labels, func(ha *convoyv1alpha1.HealthAssessment) *convoyv1alpha1.LabelSelector {
			return ha.LocalRuleSetSelector
		}
		releases, err = l.releases.Releases(s.Namespace).List(labels.Everything())
	default:
		return
	}
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, r := range releases {
		ha := r.Spec.HealthAssessment
		if ha == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(selector(ha).AsMetav1())
		if err != nil || sel.Matches(set) {
			l.add(r, shareLists) // the rules changed, not the cluster
		}
	}
}

// healthTrigger is how an update of a Release starts its health pass: the
// informer's resync and a sync attempt (status.lastAttempted: objects were
// applied) list again; a new spec shares fresh LISTs; other status writes
// start none.
func healthTrigger(old, cur *convoyv1alpha1.Release) trigger {
	switch {
	case old.ResourceVersion == cur.ResourceVersion, !equalRecord(old.Status.LastAttempted, cur.Status.LastAttempted):
		return listAgain
	case old.Generation != cur.Generation:
		return shareLists
	}
	return noPass
}

// forget drops what the loop keeps of a Release that is gone.
func (l *HealthLoop) forget(key cache.ObjectName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.delays, key)
}

// nextDelay returns when to check key again: at interval when settled, else
// after a delay that starts at 2s and doubles to 32s, never past interval.
func (l *HealthLoop) nextDelay(key cache.ObjectName, settled bool, interval time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if settled {
		delete(l.delays, key)
		return interval
	}
	d, ok := l.delays[key]
	switch {
	case !ok:
		d = minHealthDelay
	case d < maxHealthDelay:
		d *= 2
	}
	l.delays[key] = d
	return min(d, interval)
}

// pass runs one health pass of release (health.Pass) and writes its
// outcome: status.entries, then Healthy and healthSummary, then a sync
// request when the pass found a reason.
func (l *HealthLoop) pass(ctx context.Context, release *convoyv1alpha1.Release, q passOptions) (time.Duration, error) {
	key := cache.MetaObjectToName(release)
	logger := klog.FromContext(ctx)
	inv, err := l.inventories.ReleaseInventories(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		inv = nil
	} else if err != nil {
		// No Healthy this pass: InSync's held bump is written alone.
		l.status.Unhold(release)
		return 0, err
	}

	in := health.Input{
		Release:     release,
		Inventory:   inv,
		Reader:      health.NewClusterReader(l.targets, release, l.verdicts != nil),
		Verdicts:    l.verdicts,
		Now:         l.clock.Now().Truncate(time.Second),
		ListedAfter: q.listedAfter,
	}
	if ha := release.Spec.HealthAssessment; ha != nil {
		in.Rules, in.RulesErr = l.rules(release.Namespace, ha)
	}
	out := health.Pass(ctx, in)
	if out.Panicked {
		panics.WithLabelValues("health").Inc()
	}
	if out.HookPollErr != nil {
		logger.Info("Cannot poll the hook workloads", "cause", out.HookPollErr.Error())
	}
	celErrors.Add(float64(out.EvaluationErrors))
	// One line per pass, as the drift loop's "Drift pass", so that the log
	// tells a loop that stalled from one that finds nothing new (the e2e
	// tests that wait for nothing to change count these lines).
	logger.V(2).Info("Health pass", "status", out.Condition.Status, "reason", out.Condition.Reason)
	if out.WriteEntries {
		if _, err := l.writer.WriteStatus(ctx, inv, out.Entries); err != nil {
			l.status.Unhold(release)
			return 0, err
		}
	}
	passResults.WithLabelValues("health", string(out.Condition.Status), out.Condition.Reason).Inc()
	if _, err := l.status.SetCondition(ctx, release, out.Condition, out.Summary); err != nil {
		return 0, err
	}
	if len(out.SyncReasons) > 0 {
		if _, err := l.requester.Request(ctx, release.Namespace, release.Name, observerName, strings.Join(out.SyncReasons, "; ")); err != nil {
			return 0, fmt.Errorf("requesting a sync: %w", err)
		}
		syncRequests.WithLabelValues("health").Inc()
	}
	return l.nextDelay(key, out.Settled, Interval(release)), nil
}

// rules selects and compiles the rule sets a Release of namespace selects.
func (l *HealthLoop) rules(namespace string, ha *convoyv1alpha1.HealthAssessment) (*health.Rules, error) {
	globals, err := l.globals.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	locals, err := l.locals.HealthRuleSets(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sets, err := health.Select(ha, globals, locals)
	if err != nil {
		return nil, err
	}
	return l.compiler.Compile(sets)
}
