package observer

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// StatusWriter writes the observer's part of a Release status: the InSync
// and Healthy conditions, healthSummary and selfHeal, with server-side apply
// and the field manager convoy-observe. Both loops write through one
// StatusWriter: an apply sets every field its manager owns, so each apply
// must carry the whole observer part, not just the loop's own fields.
type StatusWriter struct {
	releases convoyclient.ReleasesGetter
	recorder events.EventRecorder
	clock    clock.PassiveClock

	mu    sync.Mutex
	parts map[types.UID]*observedStatus
}

// observedStatus is the observer's part of one Release status.
type observedStatus struct {
	mu            sync.Mutex
	conditions    []metav1.Condition // InSync and Healthy
	healthSummary *convoyv1alpha1.HealthSummary
	selfHeal      *convoyv1alpha1.SelfHealStatus
	lastResolved  *convoyv1alpha1.LastResolved
	// handledRefresh is status.lastHandledRefreshAt.
	handledRefresh string
}

// NewStatusWriter returns a StatusWriter that records an Event on the
// Release when the status or reason of a condition changes.
func NewStatusWriter(releases convoyclient.ReleasesGetter, recorder events.EventRecorder, clk clock.PassiveClock) *StatusWriter {
	return &StatusWriter{releases: releases, recorder: recorder, clock: clk, parts: map[types.UID]*observedStatus{}}
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
		p.handledRefresh = release.Status.LastHandledRefreshAt
		w.parts[release.UID] = p
	}
	return p
}

// Forget drops what the writer keeps of a Release that is gone.
func (w *StatusWriter) Forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
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
	})
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
	// HandledRefresh, when set, is the refresh request the pass handled.
	HandledRefresh string
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
		switch {
		case d.NoResolution:
			changed = changed || p.lastResolved != nil
			p.lastResolved = nil
		case d.Resolved != nil:
			next := lastResolved(d.Resolved)
			if p.lastResolved != nil {
				next.Time = p.lastResolved.Time
			}
			if p.lastResolved == nil || *next != *p.lastResolved {
				next.Time = metav1.NewTime(w.clock.Now().Truncate(time.Second))
				p.lastResolved = next
				changed = true
			}
		}
		if d.HandledRefresh != "" && d.HandledRefresh != p.handledRefresh {
			p.handledRefresh = d.HandledRefresh
			changed = true
		}
		return changed
	})
}

// lastResolved is the revision of r (its time unset).
func lastResolved(r *subresourcesv1alpha1.ResolvedSource) *convoyv1alpha1.LastResolved {
	return &convoyv1alpha1.LastResolved{Kind: r.Kind, URL: r.URL, Chart: r.Chart, Tag: r.Tag, Version: r.Version,
		Ref: r.Ref, Digest: r.Digest, Commit: r.Commit}
}

// set sets cond and what change changes of the observer's part (it reports
// whether it changed something), and applies the whole part when something
// changed.
func (w *StatusWriter) set(ctx context.Context, release *convoyv1alpha1.Release, cond metav1.Condition, change func(*observedStatus) bool) (bool, error) {
	p := w.part(release)
	p.mu.Lock()
	defer p.mu.Unlock()

	cond.ObservedGeneration = release.Generation
	cond.Message = truncate.String(cond.Message, truncate.Condition)
	cond.LastTransitionTime = metav1.NewTime(w.clock.Now())
	old := meta.FindStatusCondition(p.conditions, cond.Type)
	transition := old == nil || old.Status != cond.Status || old.Reason != cond.Reason
	next := observedStatus{conditions: make([]metav1.Condition, len(p.conditions)), healthSummary: p.healthSummary, selfHeal: p.selfHeal,
		lastResolved: p.lastResolved, handledRefresh: p.handledRefresh}
	copy(next.conditions, p.conditions)
	changed := meta.SetStatusCondition(&next.conditions, cond)
	changed = change(&next) || changed
	if !changed {
		return false, nil
	}

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
	if next.handledRefresh != "" {
		status.WithLastHandledRefreshAt(next.handledRefresh)
	}
	_, err := w.releases.Releases(release.Namespace).ApplyStatus(ctx,
		convoyapply.Release(release.Name, release.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerObserver, Force: true})
	if err != nil {
		return false, fmt.Errorf("writing the %s condition of release %s/%s: %w", cond.Type, release.Namespace, release.Name, err)
	}
	p.conditions, p.healthSummary, p.selfHeal = next.conditions, next.healthSummary, next.selfHeal
	p.lastResolved, p.handledRefresh = next.lastResolved, next.handledRefresh
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
