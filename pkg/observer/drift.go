// Package observer runs the observer's loops inside convoy-apiserver: the
// drift loop (InSync) and the health loop (Healthy, healthSummary). Both read
// Releases through informers and write through one StatusWriter.
package observer

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions/convoy/v1alpha1"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/syncrequest"
)

// DefaultInterval is spec.syncPolicy.interval when it is not set.
const DefaultInterval = 5 * time.Minute

// observerName is who the observer's sync requests are from.
const observerName = "convoy-observe"

// DriftLoop runs drift passes: it compares each Release's desired render with
// the live objects and writes the InSync condition. In automatic mode it
// requests a sync on drift.
type DriftLoop struct {
	passQueue
	releases  convoylisters.ReleaseLister
	checker   *drift.Checker
	status    *StatusWriter
	requester *syncrequest.Requester
	// passTimeout bounds one pass, so a stuck cluster cannot hold a worker.
	passTimeout time.Duration
}

// NewDriftLoop returns a DriftLoop fed by the Release and ReleaseInventory
// informers. Its passes start on: a Release created or its spec changed
// (generation); the renderRefs of its ReleaseInventory changed; the informer
// resync; spec.syncPolicy.interval after the previous pass. A sync request
// (an annotation) and the observer's own status writes start none.
func NewDriftLoop(releases convoyinformers.ReleaseInformer, inventories convoyinformers.ReleaseInventoryInformer,
	checker *drift.Checker, status *StatusWriter, requester *syncrequest.Requester) (*DriftLoop, error) {
	l := &DriftLoop{
		releases:    releases.Lister(),
		checker:     checker,
		status:      status,
		requester:   requester,
		passTimeout: 2 * time.Minute,
	}
	l.passQueue = newPassQueue("drift", l.pass, releases.Informer().HasSynced, inventories.Informer().HasSynced)
	_, err := releases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: l.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*convoyv1alpha1.Release), newObj.(*convoyv1alpha1.Release)
			// Equal resourceVersions: the informer's resync.
			if old.Generation != cur.Generation || old.ResourceVersion == cur.ResourceVersion {
				l.enqueue(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if r, ok := releaseOf(obj); ok {
				status.Forget(r.UID)
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

// pass runs one drift pass on the Release key and returns when the next one
// is due (0: none).
func (l *DriftLoop) pass(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	release, err := l.releases.Releases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
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
	interval := Interval(release)

	start := time.Now()
	defer func() { passDuration.WithLabelValues("drift").Observe(time.Since(start).Seconds()) }()
	report, err := l.checker.Check(ctx, release, "")
	if err != nil {
		return interval, err
	}
	cond := report.Condition()
	passResults.WithLabelValues("drift", string(cond.Status), report.Reason).Inc()
	if report.Reason == compare.ReasonInternalError {
		panics.WithLabelValues("drift").Inc()
	}
	logger.V(2).Info("Drift pass", "result", report.Result.Result, "reason", report.Reason)
	if _, err := l.status.SetCondition(ctx, release, cond, nil); err != nil {
		return interval, err
	}
	if report.Result.Result == subresourcesv1alpha1.DiffDrifted && release.Spec.SyncPolicy.Automatic != nil {
		if _, err := l.requester.Request(ctx, release.Namespace, release.Name, observerName, "drift found: "+report.Message); err != nil {
			return interval, fmt.Errorf("requesting a sync: %w", err)
		}
		syncRequests.WithLabelValues("drift").Inc()
	}
	return interval, nil
}

// Interval is spec.syncPolicy.interval, or DefaultInterval.
func Interval(release *convoyv1alpha1.Release) time.Duration {
	if i := release.Spec.SyncPolicy.Interval; i != nil && i.Duration > 0 {
		return i.Duration
	}
	return DefaultInterval
}
