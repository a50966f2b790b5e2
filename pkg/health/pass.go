package health

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
)

// Reader reads the live objects of a Release's target cluster, as the
// Release's identity: the one seam between a pass and the cluster.
// ClusterReader implements it, and gets the Release's Access one way for all
// its methods. It is one interface, not a small one and an optional one
// found by type assertion, so that a Reader cannot silently lose the
// verdict cache: one that has no LIST says so with known=false.
type Reader interface {
	// Resource returns the resource of gvk on the target cluster; rules
	// match its plural name. A kind the cluster does not serve is an error
	// for which meta.IsNoMatchError is true.
	Resource(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error)
	// Get reads the live object of entry. A missing object is an error for
	// which apierrors.IsNotFound is true (or errors.Is ErrNotFound). An
	// error that concerns the whole Release, not one object (its target
	// cluster cannot be had: no such Cluster, an invalid kubeconfig, a
	// Secret its identity may not read), is a *failure.Error of reason
	// ReasonCannotAssess; a network failure (egress.NetworkFailure) and an
	// answer over the limit (cluster.ReasonResponseTooLarge) count the same.
	Get(ctx context.Context, entry convoyv1alpha1.InventoryEntry) (*unstructured.Unstructured, error)
	// ResourceVersion tells the resourceVersion of the live object of
	// entry, and whether it exists, without reading it (a shared
	// metadata-only LIST). known is false when it cannot tell (no LIST, the
	// LIST failed, the cluster cannot be had): the pass then reads.
	ResourceVersion(ctx context.Context, entry convoyv1alpha1.InventoryEntry) (rv string, exists, known bool)
	// Scope names whom and where the objects are read as; with the object,
	// it keys the VerdictCache. It is asked only once ResourceVersion told
	// or Get read (the cluster was had).
	Scope(ctx context.Context) string
}

// Input is what one health pass of a Release looks at.
type Input struct {
	Release *convoyv1alpha1.Release
	// Inventory is the Release's ReleaseInventory, nil when there is none
	// yet.
	Inventory *convoyv1alpha1.ReleaseInventory
	// Rules are the compiled rules of the rule sets the Release selects
	// (Select, then Compiler.Compile); nil without spec.healthAssessment.
	Rules *Rules
	// RulesErr is the error of selecting or compiling them: the Release
	// cannot be assessed.
	RulesErr error
	// Reader reads the live objects; it is only used when an entry must be
	// read.
	Reader Reader
	// Verdicts, when set, reuses what the rules said of an object the
	// Reader's LIST saw unchanged.
	Verdicts *VerdictCache
	// Now is the time of the pass.
	Now time.Time
	// ListedAfter, when set, has the Reader learn resourceVersions only
	// from LISTs sent at or after it (cluster.WithListedAfter, put in the
	// pass's context by Pass): the pass follows an event after which the
	// cluster may hold something new (a sync that applied objects).
	ListedAfter time.Time
}

// Outcome is what a health pass found: what the health loop writes and
// when it checks again.
type Outcome struct {
	// Entries are the next status.entries of the inventory, to write when
	// WriteEntries is set.
	Entries      []convoyv1alpha1.InventoryEntryStatus
	WriteEntries bool
	// Condition is the Healthy condition; the writer sets its
	// observedGeneration and lastTransitionTime.
	Condition metav1.Condition
	// Summary is status.healthSummary; nil when it keeps its last value
	// (CannotAssess).
	Summary *convoyv1alpha1.HealthSummary
	// SyncReasons say why the controller should reconcile now, per "How
	// health wakes the controller"; empty: no sync request.
	SyncReasons []string
	// Settled is true when nothing is left to watch closely: every entry
	// Healthy (or, without spec.healthAssessment, no hook running). The next
	// pass is then due at spec.syncPolicy.interval, else sooner.
	Settled bool
	// EvaluationErrors counts the resources whose rules could not be
	// evaluated.
	EvaluationErrors int
	// Panicked is set when the pass panicked (CannotAssess, InternalError).
	Panicked bool
	// HookPollErr is why the hooks of a Release without
	// spec.healthAssessment could not be polled (they keep their phase and
	// the Release stays NotConfigured); nil when they could.
	HookPollErr error
}

// Pass runs one health pass of a Release: for each inventory entry it finds
// the rules that apply, reads the object when one does (or it is a hook
// workload) and gives it a state (Assess); then it sums the states up into
// the Healthy condition and the healthSummary, and lists the reasons to wake
// the controller (docs/contributors/internals.md, "The health loop"). It
// writes nothing: the caller writes the Outcome. A panic ends it as
// CannotAssess, "InternalError: ..." (the stack logged), never the caller.
func Pass(ctx context.Context, in Input) (out Outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = Outcome{Condition: CannotAssessCondition(errors.New(failure.ReasonInternalError + ": " + failure.Panicked(ctx, r))), Panicked: true}
		}
	}()
	if !in.ListedAfter.IsZero() {
		ctx = cluster.WithListedAfter(ctx, in.ListedAfter)
	}
	prev := inventory.StatusOf(in.Inventory)
	if in.Release.Spec.HealthAssessment == nil {
		entries, _, err := assessEntries(ctx, in, prev, true)
		out = Outcome{Condition: NotConfiguredCondition(), Summary: &convoyv1alpha1.HealthSummary{}}
		if err != nil {
			// NotConfigured whatever happens to the hook polling: the
			// hooks keep their last phases.
			out.HookPollErr = err
			entries = in.Inventory.Status.Entries
		}
		out.Entries, out.WriteEntries = entries, in.Inventory != nil && err == nil
		out.Settled = !slices.ContainsFunc(entries, func(e convoyv1alpha1.InventoryEntryStatus) bool {
			return e.HookPhase == convoyv1alpha1.HookRunning
		})
		if err == nil {
			out.SyncReasons = syncReasons(in, prev, entries)
		}
		return out
	}
	if in.RulesErr != nil {
		return Outcome{Condition: CannotAssessCondition(in.RulesErr)}
	}
	entries, evalErrors, err := assessEntries(ctx, in, prev, false)
	if err != nil {
		return Outcome{Condition: CannotAssessCondition(err)}
	}
	summary := Summarize(entries)
	out = Outcome{Entries: entries, WriteEntries: in.Inventory != nil, Summary: &summary, EvaluationErrors: evalErrors}
	if cond, pending := pendingCondition(in.Release, in.Inventory); pending {
		out.Condition = cond
	} else {
		out.Condition = HealthyCondition(entries)
		out.Settled = Worst(entries) == convoyv1alpha1.HealthHealthy
	}
	out.SyncReasons = syncReasons(in, prev, entries)
	return out
}

// pendingCondition returns the Pending condition when not every inventory
// entry is at status.lastAttempted.renderRef, the current render.
func pendingCondition(release *convoyv1alpha1.Release, inv *convoyv1alpha1.ReleaseInventory) (metav1.Condition, bool) {
	attempted := release.Status.LastAttempted
	if attempted == nil {
		return metav1.Condition{}, false
	}
	var entries []convoyv1alpha1.InventoryEntry
	if inv != nil {
		entries = inv.Spec.Entries
	}
	at := 0
	for _, e := range entries {
		if e.RenderRef == attempted.RenderRef {
			at++
		}
	}
	if inv != nil && at == len(entries) {
		return metav1.Condition{}, false
	}
	return PendingCondition(attempted.RenderRef, at, len(entries)), true
}

// cannotAssess classifies an error met reading an entry: it reports whether
// it concerns the whole Release (the Release cannot be assessed) rather than
// the entry (Unknown), and returns the error to report it with. By class
// (pkg/failure): what is unavailable (the cluster, its discovery) or over a
// limit (an answer of the cluster's API server larger than any
// kube-apiserver gives: reading the other entries would only read as much
// again each) concerns the whole Release; an object the identity may not
// read, or whose kind is not served, concerns its entry.
func cannotAssess(err error) (error, bool) {
	if f, ok := failure.Find(err, ReasonCannotAssess); ok {
		return f, true
	}
	if cause, ok := failure.Cause(err); ok {
		switch failure.ClassOf(cause.Reason) {
		case failure.ClassUnavailable, failure.ClassOverLimit:
			return cause, true
		}
	}
	if what := egress.NetworkFailure(err); what != "" {
		return fmt.Errorf("the cluster is unreachable (%s): %w", what, err), true
	}
	return nil, false
}

// assessEntries gives the next status of every entry of the inventory and
// counts the entries whose rules could not be evaluated. With hooksOnly (no
// spec.healthAssessment), only the hook workloads get a status (Healthy, with
// their phase). An error that concerns the whole Release (see cannotAssess)
// ends it.
func assessEntries(ctx context.Context, in Input, prev map[convoyv1alpha1.ObjectKey]convoyv1alpha1.InventoryEntryStatus,
	hooksOnly bool) ([]convoyv1alpha1.InventoryEntryStatus, int, error) {
	if in.Inventory == nil {
		return nil, 0, nil
	}
	evalErrors := 0
	var deadline *time.Duration
	if ha := in.Release.Spec.HealthAssessment; ha != nil && ha.Deadline != nil {
		deadline = &ha.Deadline.Duration
	}
	var out []convoyv1alpha1.InventoryEntryStatus
	for _, entry := range in.Inventory.Spec.Entries {
		if hooksOnly && entry.Hook == nil {
			continue
		}
		var before *convoyv1alpha1.InventoryEntryStatus
		if p, ok := prev[entry.ObjectKey]; ok {
			before = &p
		}
		st, result, err := assessEntry(ctx, in, entry, before, deadline)
		if err != nil {
			return nil, 0, err
		}
		if result == ResultError {
			evalErrors++
		}
		if hooksOnly {
			st.State, st.Message, st.FirstUnhealthy = convoyv1alpha1.HealthHealthy, "", nil
		}
		out = append(out, st)
	}
	return out, evalErrors, nil
}

// assessEntry gives the next status of one entry and the result of its
// rules. The object is read only when a rule could apply to it or it is a
// hook workload; the cluster's REST mapping is looked up only then too, so
// an entry of a kind the cluster does not serve is Healthy when no selected
// rule has its apiVersion.
func assessEntry(ctx context.Context, in Input, entry convoyv1alpha1.InventoryEntry, before *convoyv1alpha1.InventoryEntryStatus,
	deadline *time.Duration) (convoyv1alpha1.InventoryEntryStatus, Result, error) {
	gvk := schema.GroupVersionKind{Group: entry.Group, Version: entry.Version, Kind: entry.Kind}
	apiVersion := gvk.GroupVersion().String()
	noRule := Evaluate(ctx, nil, nil)
	if entry.Hook == nil && len(in.Rules.ForAPIVersion(apiVersion)) == 0 {
		return Assess(before, entry, noRule, nil, deadline, in.Now), noRule.Result, nil
	}
	resource, err := in.Reader.Resource(ctx, gvk)
	if err != nil {
		if cause, ok := cannotAssess(err); ok {
			return convoyv1alpha1.InventoryEntryStatus{}, "", cause
		}
		st := Assess(before, entry, Verdict{}, err, deadline, in.Now)
		st.HookPhase = hookPhase(entry, nil, before)
		return st, "", nil
	}
	rules := in.Rules.For(apiVersion, resource.Resource)
	if entry.Hook == nil && len(rules) == 0 {
		return Assess(before, entry, noRule, nil, deadline, in.Now), noRule.Result, nil
	}
	cached := in.Verdicts != nil
	var fingerprint string
	keyOf := func() verdictKey {
		// After the Reader told or read something: the cluster was had.
		return verdictKey{scope: in.Reader.Scope(ctx), resource: resource, namespace: entry.Namespace, name: entry.Name}
	}
	if cached {
		fingerprint = rulesFingerprint(rules)
		if rv, exists, known := in.Reader.ResourceVersion(ctx, entry); known && exists {
			if v, ok := in.Verdicts.get(keyOf(), rv, fingerprint); ok {
				st := Assess(before, entry, v.verdict, nil, deadline, in.Now)
				st.HookPhase = v.hook
				return st, v.verdict.Result, nil
			}
		}
	}
	obj, readErr := in.Reader.Get(ctx, entry)
	if readErr != nil {
		if cause, ok := cannotAssess(readErr); ok {
			return convoyv1alpha1.InventoryEntryStatus{}, "", cause
		}
		obj = nil
	}
	var verdict Verdict
	if readErr == nil {
		verdict = Evaluate(ctx, rules, obj.Object)
	}
	st := Assess(before, entry, verdict, readErr, deadline, in.Now)
	st.HookPhase = hookPhase(entry, obj, before)
	if cached && readErr == nil {
		in.Verdicts.put(keyOf(), obj.GetResourceVersion(), fingerprint, verdict, st.HookPhase)
	}
	return st, verdict.Result, nil
}

// hookPhase reads the phase of a hook workload: a Job's Complete or Failed
// condition, a Pod's phase. An object that cannot be read keeps its phase;
// an entry that is no hook has none.
func hookPhase(entry convoyv1alpha1.InventoryEntry, obj *unstructured.Unstructured, before *convoyv1alpha1.InventoryEntryStatus) convoyv1alpha1.HookStatus {
	if entry.Hook == nil {
		return ""
	}
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

// syncReasons lists why the controller should reconcile now, per "How health
// wakes the controller": a render assessed for the first time; the highest
// applied wave of the current render become fully healthy; a hook workload
// completed.
func syncReasons(in Input, prev map[convoyv1alpha1.ObjectKey]convoyv1alpha1.InventoryEntryStatus,
	next []convoyv1alpha1.InventoryEntryStatus) []string {
	inv := in.Inventory
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

	nextByKey := map[convoyv1alpha1.ObjectKey]convoyv1alpha1.InventoryEntryStatus{}
	for _, n := range next {
		nextByKey[n.ObjectKey] = n
	}
	applied := appliedEntries(in.Release, inv)
	if wave, ok := highestWave(applied); ok {
		// Fully healthy: every entry of the wave Healthy as assessed for the
		// render it was applied with.
		healthyIn := func(states map[convoyv1alpha1.ObjectKey]convoyv1alpha1.InventoryEntryStatus) bool {
			for _, e := range applied {
				if s := states[e.ObjectKey]; e.Wave == wave && (s.State != convoyv1alpha1.HealthHealthy || s.AssessedRenderRef != e.RenderRef) {
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
			why = append(why, fmt.Sprintf("hook %s %s", e.Describe(), strings.ToLower(string(n.HookPhase))))
		}
	}
	return why
}

// appliedEntries are the non-hook entries applied with the current render,
// status.lastAttempted.renderRef (all non-hook entries while there is none):
// the entries of the previous render do not make a wave.
func appliedEntries(release *convoyv1alpha1.Release, inv *convoyv1alpha1.ReleaseInventory) []convoyv1alpha1.InventoryEntry {
	var current string
	if a := release.Status.LastAttempted; a != nil {
		current = a.RenderRef
	}
	var out []convoyv1alpha1.InventoryEntry
	for _, e := range inv.Spec.Entries {
		if e.Hook == nil && (current == "" || e.RenderRef == current) {
			out = append(out, e)
		}
	}
	return out
}

// highestWave is the highest wave of entries.
func highestWave(entries []convoyv1alpha1.InventoryEntry) (int32, bool) {
	if len(entries) == 0 {
		return 0, false
	}
	wave := entries[0].Wave
	for _, e := range entries[1:] {
		wave = max(wave, e.Wave)
	}
	return wave, true
}
