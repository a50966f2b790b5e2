package observer

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// ReasonStatusRefused is the reason of the Warning Event of a status write
// the API server refused for a value that came from outside the observer.
var ReasonStatusRefused = failure.Declare(failure.Reason{
	Name: "StatusRefused", Class: failure.ClassOutcome, Shows: []failure.Where{failure.Event},
	Means: "the API server refused a status value that came from outside the observer (status.lastResolved, status.lastHandledRefreshAt): " +
		"the last accepted values were written instead, and the pass went on",
	Action: "read the Event's message for the field refused, and report it as a bug: convoy-apiserver bounds both before it writes",
})

// StatusWriter writes the observer's part of a Release status: the InSync
// and Healthy conditions, healthSummary and selfHeal, with server-side apply
// and the field manager convoy-observe. Both loops write through one
// StatusWriter: an apply sets every field its manager owns, so each apply
// must carry the whole observer part, not just the loop's own fields.
type StatusWriter struct {
	releases convoyclient.ReleasesGetter
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// hold and timers: see WithHold.
	hold   time.Duration
	timers clock.WithDelayedExecution

	mu     sync.Mutex
	parts  map[types.UID]*observedStatus
	closed bool
}

// observedStatus is the observer's part of one Release status.
type observedStatus struct {
	mu            sync.Mutex
	conditions    []metav1.Condition // InSync and Healthy
	healthSummary *convoyv1alpha1.HealthSummary
	selfHeal      *convoyv1alpha1.SelfHealStatus
	lastResolved  *convoyv1alpha1.LastResolved
	// lastResolvedValues is status.lastResolvedValuesSource.
	lastResolvedValues *convoyv1alpha1.LastResolved
	// handledRefresh is status.lastHandledRefreshAt.
	handledRefresh string
	// seenRefresh is the value of the refresh annotation this replica
	// handled last (see pendingRefresh); not in the status.
	seenRefresh string

	// held is the part a held write would apply (WithHold), written when
	// the other loop's condition reaches its generation or when timer
	// fires; release is the Release it is of.
	held    *observedStatus
	release *convoyv1alpha1.Release
	timer   clock.Timer
}

// copyPart is the status fields of p (not its lock, memory of refreshes or
// held write), the conditions copied.
func copyPart(p *observedStatus) *observedStatus {
	next := &observedStatus{conditions: make([]metav1.Condition, len(p.conditions)), healthSummary: p.healthSummary, selfHeal: p.selfHeal,
		lastResolved: p.lastResolved, lastResolvedValues: p.lastResolvedValues, handledRefresh: p.handledRefresh}
	copy(next.conditions, p.conditions)
	return next
}

// NewStatusWriter returns a StatusWriter that records an Event on the
// Release when the status or reason of a condition changes.
func NewStatusWriter(releases convoyclient.ReleasesGetter, recorder events.EventRecorder, clk clock.PassiveClock) *StatusWriter {
	return &StatusWriter{releases: releases, recorder: recorder, clock: clk, parts: map[types.UID]*observedStatus{}}
}

// StatusHold is how long the observer holds a write that only moves a
// condition's observedGeneration, waiting for the other loop's pass of the
// same generation (WithHold). Both loops pass a Release after a spec
// change, but from queues of their own: at 10,000 Releases one may be
// minutes behind the other. A reader that waits for both conditions to
// reach a generation waits for the later pass anyway.
// A pass that ends without writing (parked, failed) writes what the other
// loop holds at once (Unhold).
const StatusHold = 5 * time.Minute

// WithHold makes the writer hold, for at most hold, a write that only
// moves a condition's observedGeneration to the Release's new generation
// (its status, reason and message unchanged, nothing else changed) while
// the other condition is not at that generation yet: the other loop's pass
// of the same generation, which a spec change starts too, then writes both
// in one apply. A write that changes anything else (a verdict, the health
// summary, status.selfHeal, lastResolved) is never held, and carries a
// held one with it. timers runs the writes of holds that end
// (clock.RealClock{}). Close drops what is held.
func (w *StatusWriter) WithHold(hold time.Duration, timers clock.WithDelayedExecution) *StatusWriter {
	w.hold, w.timers = hold, timers
	return w
}

// Close drops the writes held and stops their timers: a replica that no
// longer leads writes nothing, and the next leader's passes write what
// they find.
func (w *StatusWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, p := range w.parts {
		p.mu.Lock()
		p.dropHeld()
		p.mu.Unlock()
	}
}

// dropHeld drops the held write of p and stops its timer; p.mu is held.
func (p *observedStatus) dropHeld() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.held = nil
}

// part returns the observer's part of release's status, read from release
// the first time: after a restart, the status on the server is the truth.
func (w *StatusWriter) part(release *convoyv1alpha1.Release) *observedStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.parts[release.UID]
	if !ok {
		p = &observedStatus{}
		for _, t := range []string{convoyv1alpha1.ConditionInSync, convoyv1alpha1.ConditionHealthy} {
			if c := meta.FindStatusCondition(release.Status.Conditions, t); c != nil {
				p.conditions = append(p.conditions, *c)
			}
		}
		p.healthSummary = release.Status.HealthSummary.DeepCopy()
		p.selfHeal = release.Status.SelfHeal.DeepCopy()
		p.lastResolved = release.Status.LastResolved.DeepCopy()
		p.lastResolvedValues = release.Status.LastResolvedValuesSource.DeepCopy()
		p.handledRefresh = release.Status.LastHandledRefreshAt
		w.parts[release.UID] = p
	}
	return p
}

// Forget drops what the writer keeps of a Release that is gone.
func (w *StatusWriter) Forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.parts[uid]; ok {
		p.mu.Lock()
		p.dropHeld()
		p.mu.Unlock()
	}
	delete(w.parts, uid)
}

// Warn records a Warning Event regarding release (a field contested).
func (w *StatusWriter) Warn(release *convoyv1alpha1.Release, reason, action, note string) {
	w.recorder.Eventf(release, nil, corev1.EventTypeWarning, reason, action, "%s", truncate.String(note, truncate.EventNote))
}

// SetCondition sets the condition cond.Type (InSync or Healthy) of release,
// with observedGeneration = release's generation, and, when summary is not
// nil, status.healthSummary. It writes only when something changed and
// reports whether it wrote.
func (w *StatusWriter) SetCondition(ctx context.Context, release *convoyv1alpha1.Release, cond metav1.Condition, summary *convoyv1alpha1.HealthSummary) (bool, error) {
	return w.set(ctx, release, cond, func(p *observedStatus) bool {
		if summary == nil || (p.healthSummary != nil && *summary == *p.healthSummary) {
			return false
		}
		p.healthSummary = summary.DeepCopy()
		return true
	}, "")
}

// DriftStatus is what a drift pass writes besides the InSync condition.
type DriftStatus struct {
	// SelfHeal is status.selfHeal (nil: none).
	SelfHeal *convoyv1alpha1.SelfHealStatus
	// Resolved is what the source resolved to (nil: unknown this pass,
	// status.lastResolved is kept).
	Resolved *subresourcesv1alpha1.ResolvedSource
	// NoResolution drops status.lastResolved (a ConfigMap source).
	NoResolution bool
	// ValuesResolved is what spec.valuesSource resolved to (nil: unknown
	// this pass, status.lastResolvedValuesSource is kept).
	ValuesResolved *subresourcesv1alpha1.ResolvedSource
	// NoValuesResolution drops status.lastResolvedValuesSource (no values
	// file read from a values source, or a ConfigMap one).
	NoValuesResolution bool
	// HandledRefresh, when set, is the refresh request the pass handled,
	// as status.lastHandledRefreshAt records it (a time the CRD accepts).
	HandledRefresh string
	// SeenRefresh is the annotation's value of that request, as it was
	// written.
	SeenRefresh string
}

// SetInSync sets the InSync condition of release, as SetCondition, and the
// rest of the drift loop's part (d), in one apply. status.lastResolved
// changes, with the time, only when the revision does. It writes only when
// something changed and reports whether it wrote.
func (w *StatusWriter) SetInSync(ctx context.Context, release *convoyv1alpha1.Release, cond metav1.Condition, d DriftStatus) (bool, error) {
	return w.set(ctx, release, cond, func(p *observedStatus) bool {
		changed := false
		if !apiequality.Semantic.DeepEqual(d.SelfHeal, p.selfHeal) {
			p.selfHeal = d.SelfHeal.DeepCopy()
			changed = true
		}
		var moved bool
		if p.lastResolved, moved = w.nextResolved(p.lastResolved, d.Resolved, d.NoResolution); moved {
			changed = true
		}
		if p.lastResolvedValues, moved = w.nextResolved(p.lastResolvedValues, d.ValuesResolved, d.NoValuesResolution); moved {
			changed = true
		}
		if d.HandledRefresh != "" && d.HandledRefresh != p.handledRefresh {
			p.handledRefresh = d.HandledRefresh
			changed = true
		}
		return changed
	}, d.SeenRefresh)
}

// nextResolved is what a status.lastResolved field (cur) becomes after a
// pass that resolved r (nil: unknown, cur is kept) or for a source with no
// revision (drop), and whether it changed: the time changes only when the
// revision does.
func (w *StatusWriter) nextResolved(cur *convoyv1alpha1.LastResolved, r *subresourcesv1alpha1.ResolvedSource, drop bool) (*convoyv1alpha1.LastResolved, bool) {
	switch {
	case drop:
		return nil, cur != nil
	case r == nil:
		return cur, false
	}
	next := lastResolved(r)
	if cur != nil {
		next.Time = cur.Time
		if *next == *cur {
			return cur, false
		}
	}
	next.Time = metav1.NewTime(w.clock.Now().Truncate(time.Second))
	return next, true
}

// lastResolved is the revision of r (its time unset), each field cut to
// the CRD's bound (the MaxLength of LastResolved's fields): a version of a Helm index and a Git tag's name are
// whatever the repository says.
func lastResolved(r *subresourcesv1alpha1.ResolvedSource) *convoyv1alpha1.LastResolved {
	return &convoyv1alpha1.LastResolved{Kind: truncate.String(r.Kind, 64), URL: truncate.String(r.URL, 2048), Chart: truncate.String(r.Chart, 256),
		Tag: truncate.String(r.Tag, 256), Version: truncate.String(r.Version, 256), Ref: truncate.String(r.Ref, 512),
		Digest: truncate.String(r.Digest, 128), Commit: truncate.String(r.Commit, 128)}
}

// set sets cond and what change changes of the observer's part (it reports
// whether it changed something), and applies the whole part when something
// changed. When the API server refuses a value that came from outside the
// observer (lastResolved, lastHandledRefreshAt: 422 Invalid), it writes
// the rest with their last accepted values, and records a Warning Event
// (StatusRefused): a value a tenant wrote never keeps a verdict out.
// seenRefresh, when set, is kept as the refresh annotation handled, whether
// the status changed, and was written, or not: the pass resolved again.
func (w *StatusWriter) set(ctx context.Context, release *convoyv1alpha1.Release, cond metav1.Condition, change func(*observedStatus) bool, seenRefresh string) (bool, error) {
	p := w.part(release)
	p.mu.Lock()
	defer p.mu.Unlock()

	cond.ObservedGeneration = release.Generation
	cond.Message = truncate.String(cond.Message, truncate.Condition)
	cond.LastTransitionTime = metav1.NewTime(w.clock.Now())
	old := meta.FindStatusCondition(p.conditions, cond.Type)
	transition := old == nil || old.Status != cond.Status || old.Reason != cond.Reason
	// What this write starts from: a held write, else what was written.
	base := p
	if p.held != nil {
		base = p.held
	}
	next := copyPart(base)
	changed := meta.SetStatusCondition(&next.conditions, cond)
	changed = change(next) || changed
	if seenRefresh != "" {
		// The pass handled it (it resolved the source again), whether the
		// status changes or not.
		p.seenRefresh = seenRefresh
	}
	if !changed {
		return false, nil
	}
	if w.holds(base, next, cond.Type, release.Generation) {
		w.holdWrite(p, release, next)
		return false, nil
	}
	p.dropHeld()
	if !partChanged(p, next) {
		// A held write undone: the status is what was written.
		return false, nil
	}

	err := w.apply(ctx, release, next)
	if apierrors.IsInvalid(err) && (next.lastResolved != p.lastResolved || next.lastResolvedValues != p.lastResolvedValues || next.handledRefresh != p.handledRefresh) {
		// What the API server refused came from outside the observer (a
		// refresh annotation, a revision a registry or repository named):
		// the verdict is written with the last ones it accepted.
		refused := err
		next.lastResolved, next.lastResolvedValues, next.handledRefresh = p.lastResolved, p.lastResolvedValues, p.handledRefresh
		if err = w.apply(ctx, release, next); err == nil {
			statusRefusals.Inc()
			note := "the API server refused the observer's status (" + refused.Error() + "); " +
				"the condition was written, status.lastResolved, lastResolvedValuesSource and lastHandledRefreshAt kept their last values"
			w.recorder.Eventf(release, nil, corev1.EventTypeWarning, ReasonStatusRefused, "Set"+cond.Type, "%s", truncate.String(note, truncate.EventNote))
			klog.FromContext(ctx).Info("Status refused, the verdict written without it", "release", klog.KObj(release), "err", refused)
		}
	}
	if err != nil {
		return false, fmt.Errorf("writing the %s condition of release %s/%s: %w", cond.Type, release.Namespace, release.Name, err)
	}
	p.conditions, p.healthSummary, p.selfHeal = next.conditions, next.healthSummary, next.selfHeal
	p.lastResolved, p.lastResolvedValues, p.handledRefresh = next.lastResolved, next.lastResolvedValues, next.handledRefresh
	if transition {
		eventType := corev1.EventTypeNormal
		if cond.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		note := fmt.Sprintf("%s is %s (%s): %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		w.recorder.Eventf(release, nil, eventType, cond.Reason, "Set"+cond.Type, "%s", truncate.String(note, truncate.EventNote))
	}
	klog.FromContext(ctx).V(2).Info("Wrote condition", "release", klog.KObj(release), "type", cond.Type,
		"status", cond.Status, "reason", cond.Reason, "message", cond.Message)
	return true, nil
}

// holds tells whether the write of next, from base, is one to hold: the
// writer holds, the write only moves cond's observedGeneration to
// generation, and the other condition is there but at an older generation.
func (w *StatusWriter) holds(base, next *observedStatus, condType string, generation int64) bool {
	if w.hold <= 0 || w.timers == nil {
		return false
	}
	other := convoyv1alpha1.ConditionHealthy
	if condType == convoyv1alpha1.ConditionHealthy {
		other = convoyv1alpha1.ConditionInSync
	}
	if o := meta.FindStatusCondition(next.conditions, other); o == nil || o.ObservedGeneration >= generation {
		return false
	}
	return sameVerdicts(base, next)
}

// sameVerdicts tells whether a and b differ at most in their conditions'
// observedGeneration (and lastTransitionTime).
func sameVerdicts(a, b *observedStatus) bool {
	if len(a.conditions) != len(b.conditions) || !apiequality.Semantic.DeepEqual(a.healthSummary, b.healthSummary) ||
		!apiequality.Semantic.DeepEqual(a.selfHeal, b.selfHeal) || a.lastResolved != b.lastResolved ||
		a.lastResolvedValues != b.lastResolvedValues || a.handledRefresh != b.handledRefresh {
		return false
	}
	for _, c := range a.conditions {
		d := meta.FindStatusCondition(b.conditions, c.Type)
		if d == nil || d.Status != c.Status || d.Reason != c.Reason || d.Message != c.Message {
			return false
		}
	}
	return true
}

// partChanged tells whether next differs from what was written of p.
func partChanged(p, next *observedStatus) bool {
	if !sameVerdicts(p, next) {
		return true
	}
	for _, c := range p.conditions {
		if meta.FindStatusCondition(next.conditions, c.Type).ObservedGeneration != c.ObservedGeneration {
			return true
		}
	}
	return false
}

// holdWrite keeps next as p's held write, and starts its timer unless one
// runs: the hold is counted from the first write held. p.mu is held.
func (w *StatusWriter) holdWrite(p *observedStatus, release *convoyv1alpha1.Release, next *observedStatus) {
	p.held, p.release = next, release
	statusHolds.WithLabelValues("held").Inc()
	if p.timer == nil {
		p.timer = w.timers.AfterFunc(w.hold, func() { w.flush(p, false) })
	}
}

// Unhold writes the write held for release now, if one is: a loop calls
// it when its pass of release ended without writing (parked, failed), so
// that the other loop's write does not wait for a pass that did not come.
func (w *StatusWriter) Unhold(release *convoyv1alpha1.Release) {
	w.mu.Lock()
	p, ok := w.parts[release.UID]
	w.mu.Unlock()
	if ok {
		w.flush(p, true)
	}
}

// flush writes p's held write, when its hold ended before the other loop's
// pass: a write of its own, as without holding. A failed write is logged
// and dropped (the loop's next pass writes again). stop stops the timer
// (not when the timer's own function calls it).
func (w *StatusWriter) flush(p *observedStatus, stop bool) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	held, release := p.held, p.release
	if stop {
		p.dropHeld()
	}
	p.timer, p.held = nil, nil
	if closed || held == nil || !partChanged(p, held) {
		return
	}
	statusHolds.WithLabelValues("expired").Inc()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.apply(ctx, release, held); err != nil {
		klog.Background().Error(err, "Writing a held status", "release", klog.KObj(release))
		return
	}
	p.conditions, p.healthSummary, p.selfHeal = held.conditions, held.healthSummary, held.selfHeal
	p.lastResolved, p.lastResolvedValues, p.handledRefresh = held.lastResolved, held.lastResolvedValues, held.handledRefresh
}

// apply writes next, the whole observer part of release's status, with
// server-side apply.
func (w *StatusWriter) apply(ctx context.Context, release *convoyv1alpha1.Release, next *observedStatus) error {
	status := convoyapply.ReleaseStatus()
	for _, c := range next.conditions {
		status.WithConditions(metav1apply.Condition().
			WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message).
			WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	}
	if s := next.healthSummary; s != nil {
		summary := convoyapply.HealthSummary().
			WithTotal(s.Total).WithHealthy(s.Healthy).WithProgressing(s.Progressing).
			WithDegraded(s.Degraded).WithUnknown(s.Unknown)
		// suspended is optional: applied only when some resource is
		// Suspended, so a Release without one has no such field (the apply
		// that leaves it out removes the observer's earlier value).
		if s.Suspended > 0 {
			summary.WithSuspended(s.Suspended)
		}
		status.WithHealthSummary(summary)
	}
	if s := next.selfHeal; s != nil {
		status.WithSelfHeal(selfHealApply(s))
	}
	if r := next.lastResolved; r != nil {
		status.WithLastResolved(lastResolvedApply(r))
	}
	if r := next.lastResolvedValues; r != nil {
		status.WithLastResolvedValuesSource(lastResolvedApply(r))
	}
	if next.handledRefresh != "" {
		status.WithLastHandledRefreshAt(next.handledRefresh)
	}
	_, err := w.releases.Releases(release.Namespace).ApplyStatus(ctx,
		convoyapply.Release(release.Name, release.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerObserver, Force: true})
	return err
}

// selfHealApply is s as an apply configuration: every field of s, so that
// the apply leaves none of the observer's earlier ones.
func selfHealApply(s *convoyv1alpha1.SelfHealStatus) *convoyapply.SelfHealStatusApplyConfiguration {
	out := convoyapply.SelfHealStatus()
	for _, f := range s.Contested {
		field := convoyapply.ContestedField().WithKind(f.Kind).WithName(f.Name).WithPath(f.Path).
			WithManager(f.Manager).WithHeals(f.Heals).WithSince(f.Since)
		if f.Group != "" {
			field.WithGroup(f.Group)
		}
		if f.Namespace != "" {
			field.WithNamespace(f.Namespace)
		}
		if f.Subresource != "" {
			field.WithSubresource(f.Subresource)
		}
		out.WithContested(field)
	}
	if s.Backoff != nil {
		out.WithBackoff(*s.Backoff)
	}
	if s.NextRequestAt != nil {
		out.WithNextRequestAt(*s.NextRequestAt)
	}
	return out
}

// lastResolvedApply is r as an apply configuration: its fields that are
// set.
func lastResolvedApply(r *convoyv1alpha1.LastResolved) *convoyapply.LastResolvedApplyConfiguration {
	out := convoyapply.LastResolved().WithKind(r.Kind).WithURL(r.URL).WithTime(r.Time)
	for _, f := range []struct {
		v    string
		with func(string) *convoyapply.LastResolvedApplyConfiguration
	}{{r.Chart, out.WithChart}, {r.Tag, out.WithTag}, {r.Version, out.WithVersion}, {r.Ref, out.WithRef}, {r.Digest, out.WithDigest}, {r.Commit, out.WithCommit}} {
		if f.v != "" {
			f.with(f.v)
		}
	}
	return out
}
