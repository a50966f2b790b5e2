package observer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/fairqueue"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/park"
)

// passQueue runs passes of Releases from a rate-limited queue: one pass at a
// time per Release, workers at a time in all, the namespaces taking turns
// (pkg/fairqueue). A pass gets its Release from the lister, a timeout and
// its options (passOptions: the event it follows, the Spot it parks on); it
// returns when the next one is due, and one that fails is retried with
// backoff. The rest, and why: docs/contributors/internals.md, "The queue".
type passQueue struct {
	name  string
	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// fair is the queue's store: it takes turns between namespaces and
	// counts the passes each runs.
	fair *fairqueue.Queue[cache.ObjectName]
	// spots, when set, are where passes park (the drift loop's).
	spots    *spots
	synced   []cache.InformerSynced
	releases convoylisters.ReleaseLister
	pass     passFunc
	// forget, when set, drops what the loop keeps of a Release that is gone.
	forget func(key cache.ObjectName)
	// timeout bounds one pass, so a stuck cluster cannot hold a worker.
	timeout time.Duration

	events *eventTimes
	// due holds, by Release, when its next pass is due (its interval or
	// re-check after the last pass): how late the loop is.
	due *dueTimes
}

// dueTimes holds when the next pass of each Release is due.
type dueTimes struct {
	mu sync.Mutex
	at map[cache.ObjectName]time.Time
}

func (d *dueTimes) set(key cache.ObjectName, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at[key] = at
}

func (d *dueTimes) clear(key cache.ObjectName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, key)
}

// lateness returns how long ago the most overdue pass was due, 0 when
// none is.
func (d *dueTimes) lateness(now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var late time.Duration
	for _, at := range d.at {
		late = max(late, now.Sub(at))
	}
	return late
}

// passFunc runs one pass of release and returns when the next one is due (0:
// none).
type passFunc func(ctx context.Context, release *convoyv1alpha1.Release, opts passOptions) (time.Duration, error)

// passOptions are what the queue tells a pass beyond its Release: the drift
// loop's pass hands them to its check (drift.Options), the health loop's to
// its pass (health.Input).
type passOptions struct {
	// listedAfter, when set, is when the event the pass follows was seen:
	// the cluster may hold something new since (listAgain), so the pass
	// reads through LISTs sent after it. Zero: the pass shares any fresh
	// LIST.
	listedAfter time.Time
	// spot, when set, is where the pass parks a wait for a registry or a
	// repository (the drift loop's passes).
	spot *park.Spot
}

// passTimeout bounds one pass of either loop.
const passTimeout = 2 * time.Minute

// eventTimes holds, by Release, when the latest event that enqueued it was
// seen; its next pass takes it.
type eventTimes struct {
	mu    sync.Mutex
	times map[cache.ObjectName]time.Time
}

// newPassQueue returns the queue of the loop name, which passes the Releases
// of releases with pass once the informers are synced.
func newPassQueue(name string, releases convoylisters.ReleaseLister, pass passFunc, synced ...cache.InformerSynced) passQueue {
	fair := fairqueue.New(1, func(key cache.ObjectName) string { return key.Namespace })
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{
			Name: name,
			DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[cache.ObjectName]{
				Name:  name,
				Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cache.ObjectName]{Name: name, Queue: fair}),
			}),
		})
	return passQueue{
		name:     name,
		queue:    queue,
		fair:     fair,
		synced:   synced,
		releases: releases,
		pass:     pass,
		timeout:  passTimeout,
		events:   &eventTimes{times: map[cache.ObjectName]time.Time{}},
		due:      &dueTimes{at: map[cache.ObjectName]time.Time{}},
	}
}

// trigger is how an event enqueues a pass: none, one that shares fresh
// LISTs, or one that reads through LISTs sent after the event
// (docs/contributors/internals.md, "Fleet scale").
type trigger int

const (
	// noPass: the event starts no pass.
	noPass trigger = iota
	// shareLists: only what the pass expects changed (a new spec, a rule
	// set); the pass shares any fresh LIST.
	shareLists
	// listAgain: the cluster may hold something new, or the event is
	// the informer's resync; the pass reads through LISTs sent after it.
	listAgain
)

// enqueue adds the Release of obj (a Release or its same-named inventory)
// after an event that may have changed the cluster (listAgain).
func (q *passQueue) enqueue(obj any) { q.add(obj, listAgain) }

// add adds the Release of obj as trigger t says. A shareLists event keeps
// the time of a listAgain one that is still waiting for its pass.
func (q *passQueue) add(obj any, t trigger) {
	if t == noPass {
		return
	}
	name, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if t == listAgain {
		q.events.mu.Lock()
		q.events.times[name] = time.Now()
		q.events.mu.Unlock()
	}
	q.queue.Add(name)
}

// addAfter adds the Release of obj after d, for a pass that shares fresh
// LISTs (a refresh request).
func (q *passQueue) addAfter(obj any, d time.Duration) {
	name, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	q.queue.AddAfter(name, d)
}

// takeEvent returns when the latest event that enqueued key was seen, and
// forgets it; false when none did since the last pass.
func (q *passQueue) takeEvent(key cache.ObjectName) (time.Time, bool) {
	q.events.mu.Lock()
	defer q.events.mu.Unlock()
	t, ok := q.events.times[key]
	delete(q.events.times, key)
	return t, ok
}

// keepEvent gives back to key the event its failed pass took, unless a
// newer one came meanwhile.
func (q *passQueue) keepEvent(key cache.ObjectName, t time.Time) {
	q.events.mu.Lock()
	defer q.events.mu.Unlock()
	if newer, ok := q.events.times[key]; !ok || newer.Before(t) {
		q.events.times[key] = t
	}
}

// shareOf is how many of workers the passes of one namespace run on while
// another namespace's passes wait: half, rounded up.
func shareOf(workers int) int { return (workers + 1) / 2 }

// Run runs workers passes at a time until ctx is done.
func (q *passQueue) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer q.queue.ShutDown()
	logger := klog.FromContext(ctx).WithName(q.name)
	ctx = klog.NewContext(ctx, logger)
	q.fair.SetShare(shareOf(workers))
	logger.Info("Starting loop", "workers", workers, "shareOfANamespace", shareOf(workers))
	if !cache.WaitForNamedCacheSyncWithContext(ctx, q.synced...) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for q.processNext(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping loop")
}

// runPass runs one pass of the Release key; a panic ends that pass as an
// error (retried with backoff), is logged with its stack and counted, and
// the worker goes on with the next Release.
func (q *passQueue) runPass(ctx context.Context, key cache.ObjectName, opts passOptions) (next time.Duration, err error) {
	defer func() {
		if r := recover(); r != nil {
			panics.WithLabelValues(q.name).Inc()
			next, err = 0, fmt.Errorf("the %s pass of %s panicked: %s", q.name, key, failure.Panicked(ctx, r))
		}
	}()
	release, err := q.releases.Releases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		if q.forget != nil {
			q.forget(key)
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if release.DeletionTimestamp != nil {
		return 0, nil
	}
	opts.spot = q.spots.take(key)
	logger := klog.FromContext(ctx).WithValues("release", klog.KObj(release))
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, logger), q.timeout)
	defer cancel()
	start := time.Now()
	defer func() { passDuration.WithLabelValues(q.name).Observe(time.Since(start).Seconds()) }()
	return q.pass(ctx, release, opts)
}

func (q *passQueue) processNext(ctx context.Context) bool {
	key, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(key)
	defer q.fair.Done(key) // its namespace runs one pass fewer

	q.due.clear(key)
	var opts passOptions
	event, followsEvent := q.takeEvent(key)
	if followsEvent {
		opts.listedAfter = event
	}
	next, err := q.runPass(ctx, key, opts)
	if errors.Is(err, park.ErrParked) {
		// Its wake adds it again when the request ends; that pass still
		// follows the event.
		klog.FromContext(ctx).V(4).Info("Pass parked", "loop", q.name, "release", key)
		if followsEvent {
			q.keepEvent(key, event)
		}
		q.queue.Forget(key)
		return true
	}
	q.spots.ended(key)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Pass failed", "loop", q.name, "release", key)
		if followsEvent {
			q.keepEvent(key, event) // the retry still follows it
		}
		q.queue.AddRateLimited(key)
		return true
	}
	q.queue.Forget(key)
	if next > 0 {
		q.due.set(key, time.Now().Add(next))
		q.queue.AddAfter(key, next)
	}
	return true
}
