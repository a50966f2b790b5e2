package observer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions/convoy/v1alpha1"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
	"github.com/kumodo/convoy-apiserver/pkg/syncrequest"
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
	requester   *syncrequest.Requester
	clock       clock.PassiveClock
	passTimeout time.Duration

	mu     sync.Mutex
	delays map[cache.ObjectName]time.Duration
}

// NewHealthLoop returns a HealthLoop. Its passes start on: a Release created,
// its spec or status.lastAttempted changed; its inventory's spec changed; any
// rule set changed; the informer resync; and the re-check delays.
func NewHealthLoop(inf HealthInformers, targets cluster.Targets, compiler *health.Compiler, writer *inventory.Writer,
	status *StatusWriter, requester *syncrequest.Requester, clk clock.PassiveClock) (*HealthLoop, error) {
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
		passTimeout: 2 * time.Minute,
		delays:      map[cache.ObjectName]time.Duration{},
	}
	l.passQueue = newPassQueue("health", l.pass, inf.Releases.Informer().HasSynced, inf.Inventories.Informer().HasSynced,
		inf.Globals.Informer().HasSynced, inf.Locals.Informer().HasSynced)
	handlers := []struct {
		informer cache.SharedIndexInformer
		funcs    cache.ResourceEventHandlerFuncs
	}{
		{inf.Releases.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: l.enqueue,
			UpdateFunc: func(oldObj, newObj any) {
				old, cur := oldObj.(*convoyv1alpha1.Release), newObj.(*convoyv1alpha1.Release)
				if old.Generation != cur.Generation || old.ResourceVersion == cur.ResourceVersion ||
					!equalRecord(old.Status.LastAttempted, cur.Status.LastAttempted) {
					l.enqueue(cur)
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

// ruleSetHandler checks every Release again when a rule set changes.
func (l *HealthLoop) ruleSetHandler() cache.ResourceEventHandlerFuncs {
	all := func(any) {
		releases, err := l.releases.List(labels.Everything())
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		for _, r := range releases {
			l.enqueue(r)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: all, UpdateFunc: func(_, n any) { all(n) }, DeleteFunc: all}
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

// assessment is the outcome of assessing the entries of one inventory.
type assessment struct {
	entries []convoyv1alpha1.InventoryEntryStatus
	// cannot is set when the Release cannot be assessed at all.
	cannot string
}

func (l *HealthLoop) pass(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	release, err := l.releases.Releases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		l.nextDelay(key, true, 0)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if release.DeletionTimestamp != nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("release", klog.KObj(release))
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, logger), l.passTimeout)
	defer cancel()
	start := time.Now()
	defer func() { passDuration.WithLabelValues("health").Observe(time.Since(start).Seconds()) }()
	interval := Interval(release)
	inv, err := l.inventories.ReleaseInventories(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		inv = nil
	} else if err != nil {
		return 0, err
	}
	now := l.clock.Now().Truncate(time.Second)
	prev := inventory.StatusOf(inv)

	var a assessment
	ha := release.Spec.HealthAssessment
	if ha == nil {
		// Not configured: only the hook workloads are polled.
		a = l.assess(ctx, release, inv, prev, nil, true, now)
	} else {
		a = l.assessConfigured(ctx, release, inv, prev, now)
	}
	if a.cannot != "" && ha == nil {
		// Without spec.healthAssessment the Release is NotConfigured whatever
		// happens to the hook polling: keep the hooks' last phases.
		logger.Info("Cannot poll the hook workloads", "cause", a.cannot)
		a = assessment{entries: inv.Status.Entries}
	}
	if a.cannot != "" {
		cond := metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionUnknown,
			Reason: health.ReasonCannotAssess, Message: a.cannot}
		passResults.WithLabelValues("health", string(cond.Status), cond.Reason).Inc()
		// The summary keeps its last value.
		if _, err := l.status.SetCondition(ctx, release, cond, nil); err != nil {
			return 0, err
		}
		return l.nextDelay(key, false, interval), nil
	}
	if inv != nil {
		if _, err := l.writer.WriteStatus(ctx, inv, a.entries); err != nil {
			return 0, err
		}
	}

	var cond metav1.Condition
	summary := health.Summarize(a.entries)
	settled := true
	switch {
	case ha == nil:
		cond = metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue,
			Reason: health.ReasonNotConfigured, Message: "spec.healthAssessment is not set"}
		summary = convoyv1alpha1.HealthSummary{}
		settled = !hookRunning(a.entries)
	case pending(release, inv) != "":
		cond = metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionUnknown,
			Reason: health.ReasonPending, Message: pending(release, inv)}
		settled = false
	default:
		cond = health.HealthyCondition(a.entries)
		settled = health.Worst(a.entries) == convoyv1alpha1.HealthHealthy
	}
	passResults.WithLabelValues("health", string(cond.Status), cond.Reason).Inc()
	if _, err := l.status.SetCondition(ctx, release, cond, &summary); err != nil {
		return 0, err
	}
	if why := syncReasons(inv, prev, a.entries); len(why) > 0 {
		if _, err := l.requester.Request(ctx, release.Namespace, release.Name, observerName, strings.Join(why, "; ")); err != nil {
			return 0, fmt.Errorf("requesting a sync: %w", err)
		}
		syncRequests.WithLabelValues("health").Inc()
	}
	return l.nextDelay(key, settled, interval), nil
}

// pending says why the health of release does not count yet: not every
// inventory entry is at status.lastAttempted.renderRef. "" when it counts.
func pending(release *convoyv1alpha1.Release, inv *convoyv1alpha1.ReleaseInventory) string {
	attempted := release.Status.LastAttempted
	if attempted == nil {
		return ""
	}
	if inv == nil {
		return fmt.Sprintf("render %s is not in the inventory yet", attempted.RenderRef)
	}
	at := 0
	for _, e := range inv.Spec.Entries {
		if e.RenderRef == attempted.RenderRef {
			at++
		}
	}
	if at == len(inv.Spec.Entries) {
		return ""
	}
	return fmt.Sprintf("%d of %d inventory entries are at render %s", at, len(inv.Spec.Entries), attempted.RenderRef)
}

// assessConfigured selects and compiles the rules of release and assesses its
// entries with them.
func (l *HealthLoop) assessConfigured(ctx context.Context, release *convoyv1alpha1.Release, inv *convoyv1alpha1.ReleaseInventory,
	prev map[inventory.Key]convoyv1alpha1.InventoryEntryStatus, now time.Time) assessment {
	globals, err := l.globals.List(labels.Everything())
	if err != nil {
		return assessment{cannot: err.Error()}
	}
	locals, err := l.locals.HealthRuleSets(release.Namespace).List(labels.Everything())
	if err != nil {
		return assessment{cannot: err.Error()}
	}
	sets, err := health.Select(release.Spec.HealthAssessment, globals, locals)
	if err != nil {
		return assessment{cannot: err.Error()}
	}
	rules, err := l.compiler.Compile(sets)
	if err != nil {
		return assessment{cannot: err.Error()}
	}
	return l.assess(ctx, release, inv, prev, rules, false, now)
}

// assess gives the next status of every entry of inv. With hooksOnly, only
// hook workloads are read (for their phase) and the other entries get no
// status.
func (l *HealthLoop) assess(ctx context.Context, release *convoyv1alpha1.Release, inv *convoyv1alpha1.ReleaseInventory,
	prev map[inventory.Key]convoyv1alpha1.InventoryEntryStatus, rules *health.Rules, hooksOnly bool, now time.Time) assessment {
	if inv == nil || len(inv.Spec.Entries) == 0 {
		return assessment{}
	}
	var access *cluster.Access
	var deadline *time.Duration
	if d := release.Spec.HealthAssessment; d != nil && d.Deadline != nil {
		deadline = &d.Deadline.Duration
	}
	var out []convoyv1alpha1.InventoryEntryStatus
	for _, entry := range inv.Spec.Entries {
		if hooksOnly && entry.Hook == nil {
			continue
		}
		if access == nil {
			a, err := l.targets.ForRelease(ctx, release)
			if err != nil {
				return assessment{cannot: err.Error()}
			}
			access = a
		}
		target := access.Target
		gvk := schema.GroupVersionKind{Group: entry.Group, Version: entry.Version, Kind: entry.Kind}
		var before *convoyv1alpha1.InventoryEntryStatus
		if p, ok := prev[entry.ObjectKey]; ok {
			before = &p
		}
		mapping, err := target.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			if what := compare.NetworkFailure(err); what != "" {
				return assessment{cannot: fmt.Sprintf("the cluster is unreachable (%s): %v", what, err)}
			}
			out = append(out, health.Assess(before, entry, health.Verdict{}, fmt.Errorf("%s is not known to the cluster: %w", gvk, err), deadline, now))
			continue
		}
		var applicable []*health.CompiledRule
		if rules != nil {
			applicable = rules.For(gvk.GroupVersion().String(), mapping.Resource.Resource)
		}
		if !health.NeedsRead(applicable) && entry.Hook == nil {
			out = append(out, health.Assess(before, entry, health.Evaluate(ctx, nil, nil), nil, deadline, now))
			continue
		}
		obj, readErr := target.Dynamic.Resource(mapping.Resource).Namespace(entry.Namespace).Get(ctx, entry.Name, metav1.GetOptions{})
		if readErr != nil {
			if what := compare.NetworkFailure(readErr); what != "" {
				return assessment{cannot: fmt.Sprintf("the cluster is unreachable (%s): %v", what, readErr)}
			}
			switch {
			case apierrors.IsNotFound(readErr):
				readErr = fmt.Errorf("%s %s is not on the cluster", entry.Kind, key(entry))
			case apierrors.IsForbidden(readErr), apierrors.IsUnauthorized(readErr):
				readErr = fmt.Errorf("%s may not get %s %s: %w", access.Who(), mapping.Resource.GroupResource(), key(entry), readErr)
			}
		}
		var verdict health.Verdict
		if readErr == nil {
			verdict = health.Evaluate(ctx, applicable, obj.Object)
			if verdict.Result == health.ResultError {
				celErrors.Inc()
			}
		}
		st := health.Assess(before, entry, verdict, readErr, deadline, now)
		if entry.Hook != nil {
			st.HookPhase = hookPhase(obj, before)
			if hooksOnly {
				st.State, st.Message, st.FirstUnhealthy = convoyv1alpha1.HealthHealthy, "", nil
			}
		}
		out = append(out, st)
	}
	return assessment{entries: out}
}

func key(e convoyv1alpha1.InventoryEntry) string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Name
}

// hookPhase reads the phase of a hook workload: a Job's Complete or Failed
// condition, a Pod's phase. An object that cannot be read keeps its phase.
func hookPhase(obj *unstructured.Unstructured, before *convoyv1alpha1.InventoryEntryStatus) convoyv1alpha1.HookStatus {
	if obj == nil {
		if before != nil {
			return before.HookPhase
		}
		return ""
	}
	switch obj.GetKind() {
	case "Pod":
		switch phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase {
		case "Succeeded":
			return convoyv1alpha1.HookSucceeded
		case "Failed":
			return convoyv1alpha1.HookFailed
		}
	default: // Job
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			switch m["type"] {
			case "Complete":
				return convoyv1alpha1.HookSucceeded
			case "Failed":
				return convoyv1alpha1.HookFailed
			}
		}
	}
	return convoyv1alpha1.HookRunning
}

func hookDone(p convoyv1alpha1.HookStatus) bool {
	return p == convoyv1alpha1.HookSucceeded || p == convoyv1alpha1.HookFailed
}

func hookRunning(entries []convoyv1alpha1.InventoryEntryStatus) bool {
	return slices.ContainsFunc(entries, func(e convoyv1alpha1.InventoryEntryStatus) bool {
		return e.HookPhase == convoyv1alpha1.HookRunning
	})
}

// syncReasons lists why the controller should reconcile now, per "How health
// wakes the controller": a render assessed for the first time, the highest
// applied wave become fully healthy, a hook workload completed.
func syncReasons(inv *convoyv1alpha1.ReleaseInventory, prev map[inventory.Key]convoyv1alpha1.InventoryEntryStatus,
	next []convoyv1alpha1.InventoryEntryStatus) []string {
	if inv == nil {
		return nil
	}
	var why []string
	assessedBefore := map[string]bool{}
	for _, p := range prev {
		assessedBefore[p.AssessedRenderRef] = true
	}
	var firstRefs []string
	for _, n := range next {
		if n.AssessedRenderRef != "" && !assessedBefore[n.AssessedRenderRef] && !slices.Contains(firstRefs, n.AssessedRenderRef) {
			firstRefs = append(firstRefs, n.AssessedRenderRef)
		}
	}
	for _, ref := range firstRefs {
		why = append(why, "render "+ref+" assessed for the first time")
	}

	nextByKey := map[inventory.Key]convoyv1alpha1.InventoryEntryStatus{}
	for _, n := range next {
		nextByKey[n.ObjectKey] = n
	}
	if wave, ok := highestWave(inv); ok {
		healthyIn := func(states map[inventory.Key]convoyv1alpha1.InventoryEntryStatus) bool {
			for _, e := range inv.Spec.Entries {
				if e.Wave == wave && e.Hook == nil && states[e.ObjectKey].State != convoyv1alpha1.HealthHealthy {
					return false
				}
			}
			return true
		}
		if !healthyIn(prev) && healthyIn(nextByKey) {
			why = append(why, fmt.Sprintf("wave %d is healthy", wave))
		}
	}
	for _, e := range inv.Spec.Entries {
		if e.Hook == nil {
			continue
		}
		if n := nextByKey[e.ObjectKey]; hookDone(n.HookPhase) && !hookDone(prev[e.ObjectKey].HookPhase) {
			why = append(why, fmt.Sprintf("hook %s %s %s", e.Kind, key(e), strings.ToLower(string(n.HookPhase))))
		}
	}
	return why
}

// highestWave is the highest wave of the non-hook entries of inv.
func highestWave(inv *convoyv1alpha1.ReleaseInventory) (int32, bool) {
	var wave int32
	found := false
	for _, e := range inv.Spec.Entries {
		if e.Hook == nil && (!found || e.Wave > wave) {
			wave, found = e.Wave, true
		}
	}
	return wave, found
}
