// Package observer runs the observer's loops inside convoy-apiserver: the
// drift loop (InSync) and the health loop (Healthy, healthSummary). Both read
// Releases through informers and write through one StatusWriter.
package observer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/contest"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

// DefaultInterval is spec.syncPolicy.interval when it is not set.
const DefaultInterval = 5 * time.Minute

// observerName is who the observer's sync requests are from.
const observerName = "convoy-observe"

// Checker is the drift check of a pass: *drift.Checker.
type Checker interface {
	Check(ctx context.Context, release *convoyv1alpha1.Release, opts drift.Options) (*drift.Report, error)
}

// DriftLoop runs drift passes: it compares each Release's desired render with
// the live objects and writes the InSync condition. In automatic mode it
// requests a sync on drift.
type DriftLoop struct {
	passQueue
	checker   Checker
	status    *StatusWriter
	requester *requests.Requester
	contests  *contest.Tracker
}

// NewDriftLoop returns a DriftLoop fed by the Release and ReleaseInventory
// informers. Its passes start on: a Release created or its spec changed
// (generation); the renderRefs of its ReleaseInventory changed; the informer
// resync; spec.syncPolicy.interval after the previous pass; a refresh
// request (an annotation), RefreshDelay after it. A sync request and the
// observer's own status writes start none.
func NewDriftLoop(releases convoyinformers.ReleaseInformer, inventories convoyinformers.ReleaseInventoryInformer,
	checker Checker, status *StatusWriter, requester *requests.Requester, contests *contest.Tracker) (*DriftLoop, error) {
	l := &DriftLoop{checker: checker, status: status, requester: requester, contests: contests}
	l.passQueue = newPassQueue("drift", releases.Lister(), l.pass, releases.Informer().HasSynced, inventories.Informer().HasSynced)
	l.spots = newSpots(park.DefaultGrace, l.queue.Add)
	_, err := releases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: l.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*convoyv1alpha1.Release), newObj.(*convoyv1alpha1.Release)
			if !l.queueRefresh(old, cur) {
				l.add(cur, driftTrigger(old, cur))
			}
		},
		DeleteFunc: func(obj any) {
			if r, ok := releaseOf(obj); ok {
				status.Forget(r.UID)
				if contests != nil {
					contests.Forget(r.UID)
				}
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching releases: %w", err)
	}
	_, err = inventories.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: l.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*convoyv1alpha1.ReleaseInventory), newObj.(*convoyv1alpha1.ReleaseInventory)
			if !slices.Equal(renderRefs(old), renderRefs(cur)) {
				l.enqueue(cur) // the inventory has its Release's name
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching release inventories: %w", err)
	}
	return l, nil
}

// driftTrigger is how an update of a Release starts its drift pass: the
// informer's resync (equal resourceVersions) lists again; a new spec
// (generation) changed only the desired render, so its pass shares fresh
// LISTs; the observer's own status writes and a sync request start none.
func driftTrigger(old, cur *convoyv1alpha1.Release) trigger {
	switch {
	case old.ResourceVersion == cur.ResourceVersion:
		return listAgain
	case old.Generation != cur.Generation:
		return shareLists
	}
	return noPass
}

// releaseOf returns the Release of a delete event, also from a tombstone.
func releaseOf(obj any) (*convoyv1alpha1.Release, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	r, ok := obj.(*convoyv1alpha1.Release)
	return r, ok
}

// renderRefs lists the distinct renderRefs of an inventory, sorted.
func renderRefs(inv *convoyv1alpha1.ReleaseInventory) []string {
	var refs []string
	for _, e := range inv.Spec.Entries {
		refs = append(refs, e.RenderRef)
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// pass runs one drift pass of release and returns when the next one is due.
// A pass whose source would keep it waiting parks (park.ErrParked) and
// writes nothing. What it found, the InSync condition and status.selfHeal (the contested
// fields and the backoff of self-heal, after this pass's decision), is
// written in one apply before the sync request it decided on.
func (l *DriftLoop) pass(ctx context.Context, release *convoyv1alpha1.Release, q passOptions) (time.Duration, error) {
	interval := Interval(release)
	opts := drift.Options{ListedAfter: q.listedAfter, Spot: q.spot}
	refresh, refreshing := l.refreshOf(release)
	if refreshing {
		opts.ResolvedAfter = refresh.at
	}
	report, err := l.checker.Check(ctx, release, opts)
	if err != nil {
		// No InSync this pass: Healthy's held bump is written alone.
		l.status.Unhold(release)
		return interval, err
	}
	cond := report.Condition()
	request := report.Result.Verdict == subresourcesv1alpha1.DiffDrifted && release.Spec.SyncPolicy.Automatic != nil
	var selfHeal *convoyv1alpha1.SelfHealStatus
	if l.contests != nil {
		d := l.contests.Decide(contest.Pass{Release: release, Verdict: report.Result.Verdict, Objects: report.Objects, Heal: request, Interval: interval})
		l.recordContests(ctx, release, d, &cond)
		if request && !d.Request {
			klog.FromContext(ctx).V(2).Info("Self-heal backs off: every drifted field is contested")
		}
		request, selfHeal = d.Request, d.Status
	}
	passResults.WithLabelValues("drift", string(cond.Status), report.Reason).Inc()
	if report.Reason == failure.ReasonInternalError {
		panics.WithLabelValues("drift").Inc()
	}
	klog.FromContext(ctx).V(2).Info("Drift pass", "generation", release.Generation, "result", report.Result.Verdict, "reason", report.Reason)
	vs := release.Spec.ValuesSource
	status := DriftStatus{SelfHeal: selfHeal, NoResolution: release.Spec.Source.ConfigMap != nil,
		NoValuesResolution: !render.ReadsValuesSource(release) || vs == nil || vs.ConfigMap != nil}
	if report.Desired != nil && report.Desired.Source == subresourcesv1alpha1.RenderSourceFresh {
		// A stored render's revision is not what the source resolves to.
		status.Resolved = report.Desired.Resolved
		status.ValuesResolved = report.Desired.ValuesResolved
	}
	if refreshing {
		refresh.handled(ctx, &status)
	}
	// A status the API server refuses does not keep the pass from its
	// sync request: the cluster drifted whatever the status says.
	_, werr := l.status.SetInSync(ctx, release, cond, status)
	if werr != nil {
		klog.FromContext(ctx).Error(werr, "Writing the drift pass's status")
	}
	if request {
		if _, err := l.requester.Request(ctx, release.Namespace, release.Name, observerName, "drift found: "+report.Message); err != nil {
			return interval, errors.Join(werr, fmt.Errorf("requesting a sync: %w", err))
		}
		syncRequests.WithLabelValues("drift").Inc()
	}
	if werr != nil {
		return interval, werr
	}
	return interval, nil
}

// recordContests records what a pass decided of the contested fields (d): a
// Warning Event for each field that became contested, the gauge of them all,
// and their names in the InSync message of a pass that found drift.
func (l *DriftLoop) recordContests(ctx context.Context, release *convoyv1alpha1.Release, d contest.Decision, cond *metav1.Condition) {
	for _, f := range d.NewlyContested {
		note := fmt.Sprintf("%s of %s is contested: %s took it back after %d self-heals; self-heal backs off. Remove the field from the render, or let %s own it",
			f.Path, f.Object.Describe(), f.Owner(), f.Heals, f.Manager)
		l.status.Warn(release, ReasonFieldContested, "Contest", note)
		klog.FromContext(ctx).Info("Field contested", "release", klog.KObj(release), "object", f.Object.Describe(), "path", f.Path, "manager", f.Manager)
	}
	if d.Observed {
		contestedFields.Set(float64(d.Total))
	}
	if len(d.Contested) > 0 && cond.Reason == string(subresourcesv1alpha1.DiffDrifted) {
		var parts []string
		for _, f := range d.Contested {
			parts = append(parts, fmt.Sprintf("%s of %s by %s", f.Path, f.Object.Describe(), f.Owner()))
		}
		slices.Sort(parts)
		cond.Message += "; contested (self-heal backs off): " + strings.Join(parts, ", ")
	}
}

// ReasonFieldContested is the reason of the Warning Event of a field that
// became contested.
var ReasonFieldContested = failure.Declare(failure.Reason{
	Name: "FieldContested", Class: failure.ClassOutcome, Shows: []failure.Where{failure.Event},
	Means:  "another controller took a field back after several self-heals: self-heal of the Release backs off",
	Action: "remove the field from the render, or let the manager the Event names own it",
})

// Interval is spec.syncPolicy.interval, or DefaultInterval.
func Interval(release *convoyv1alpha1.Release) time.Duration {
	if i := release.Spec.SyncPolicy.Interval; i != nil && i.Duration > 0 {
		return i.Duration
	}
	return DefaultInterval
}
