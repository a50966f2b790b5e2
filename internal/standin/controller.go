package standin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// HoldPoll is how often a rollout held at a wave looks at the wave's health
// again, besides the sync requests the observer sends when a wave becomes
// healthy.
var HoldPoll = 2 * time.Second

// Controller runs the Applier on Releases like convoy's controller: on a
// Release's creation, a spec change and a sync request it applies a new
// render wave by wave (hooks, inventory, rollout, each wave held until the
// observer finds it Healthy), or the render it applied last all again
// (self-heal); it never prunes. The steps: docs/contributors/internals.md
// ("The local control plane and the e2e harness").
type Controller struct {
	Applier *Applier
	// Workers is the number of Releases handled at once.
	Workers int

	releases convoylisters.ReleaseLister
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu      sync.Mutex
	handled map[types.UID]trigger // the last trigger handled per Release
}

// trigger is what starts a sync: the generation and the sync request.
type trigger struct {
	generation  int64
	syncRequest string
}

func triggerOf(r *convoyv1alpha1.Release) trigger {
	return trigger{generation: r.Generation, syncRequest: r.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]}
}

// Run watches Releases with factory's informer and handles them until ctx
// is done. factory must not have been started.
func (c *Controller) Run(ctx context.Context, factory convoyinformers.SharedInformerFactory) error {
	logger := klog.FromContext(ctx).WithName("standin")
	ctx = klog.NewContext(ctx, logger)
	informer := factory.Convoy().V1alpha1().Releases()
	c.releases = informer.Lister()
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "standin"})
	c.handled = map[types.UID]trigger{}
	enqueue := func(obj any) {
		if key, err := cache.ObjectToName(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if r, ok := obj.(*convoyv1alpha1.Release); ok {
				c.mu.Lock()
				delete(c.handled, r.UID)
				c.mu.Unlock()
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return errors.New("standin: the Release informer did not sync")
	}
	logger.Info("Development stand-in of convoy's controller running")
	var wg sync.WaitGroup
	for range max(c.Workers, 1) {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	requeue, err := c.sync(ctx, key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing release", "release", key)
		c.queue.AddRateLimited(key)
	case requeue > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, requeue)
	default:
		c.queue.Forget(key)
	}
	return true
}

// sync handles one Release and says when to look at it again (0: at its
// next change).
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	release, err := c.releases.Releases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if release.DeletionTimestamp != nil {
		return 0, nil
	}
	c.mu.Lock()
	last, seen := c.handled[release.UID]
	c.mu.Unlock()
	now := triggerOf(release)
	triggered := !seen || last != now
	rollout := release.Status.Rollout
	holding := rollout != nil && (rollout.Phase == convoyv1alpha1.RolloutHolding || rollout.Phase == convoyv1alpha1.RolloutProgressing)

	var requeue time.Duration
	switch {
	case triggered || holding:
		r, err := c.Applier.Render(ctx, release)
		if err != nil {
			// A broken source: the observer's InSync says why; wait for a change.
			klog.FromContext(ctx).Info("Cannot render the release", "release", key, "err", err)
			break
		}
		attempted := release.Status.LastAttempted
		switch {
		case attempted == nil || attempted.RenderRef != r.Ref || (triggered && rollout != nil && rollout.Phase == convoyv1alpha1.RolloutFailed):
			requeue, err = c.start(ctx, release, r)
		case holding:
			requeue, err = c.advance(ctx, release, r)
		default:
			err = c.heal(ctx, release, r)
		}
		if err != nil {
			return 0, err
		}
	}
	c.mu.Lock()
	c.handled[release.UID] = now
	c.mu.Unlock()
	return requeue, c.recordHealthy(ctx, release)
}

// waves are the sync waves of the non-hook objects of r, in order.
func waves(r *render.Render) []int32 {
	var ws []int32
	for _, obj := range r.Objects {
		if _, hook := HookOf(obj); hook {
			continue
		}
		if w := WaveOf(obj); !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	return ws
}

// objectsOf are the objects of r in wave w (not hooks), or the hooks of phase.
func objectsOf(r *render.Render, w int32, phase convoyv1alpha1.HookPhase) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range r.Objects {
		p, hook := HookOf(obj)
		switch {
		case phase != "" && hook && p == phase:
			out = append(out, obj)
		case phase == "" && !hook && WaveOf(obj) == w:
			out = append(out, obj)
		}
	}
	return out
}

// start begins the rollout of a new render: lastAttempted, the PreSync hooks
// and the first wave.
func (c *Controller) start(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	a := c.Applier
	if err := a.Store(ctx, release, r); err != nil {
		return 0, err
	}
	ws := waves(r)
	first := int32(0)
	if len(ws) > 0 {
		first = ws[0]
	}
	attempted := a.Record(r.Ref)
	if err := a.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) {
		st.LastAttempted = attempted
		st.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutProgressing, Wave: first}
	}); err != nil {
		return 0, err
	}
	logger.Info("Rolling out a new render", "release", klog.KObj(release), "renderRef", r.Ref, "waves", ws)
	if err := c.applyStep(ctx, release, r, objectsOf(r, 0, convoyv1alpha1.HookPreSync)); err != nil {
		return 0, err
	}
	return c.applyWave(ctx, release, r, ws, first)
}

// applyWave applies wave w, then holds there or, without health assessment,
// goes on at once.
func (c *Controller) applyWave(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render, ws []int32, w int32) (time.Duration, error) {
	for {
		if err := c.applyStep(ctx, release, r, objectsOf(r, w, "")); err != nil {
			return 0, err
		}
		i := slices.Index(ws, w)
		if i < 0 || i == len(ws)-1 {
			return 0, c.finish(ctx, release, r, w)
		}
		if release.Spec.HealthAssessment != nil {
			return HoldPoll, c.Applier.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) {
				st.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutHolding, Wave: w}
			})
		}
		w = ws[i+1]
	}
}

// applyStep applies objs and adds them to the inventory at r's ref.
func (c *Controller) applyStep(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render, objs []*unstructured.Unstructured) error {
	if len(objs) == 0 {
		return nil
	}
	if err := c.Applier.ApplyObjects(ctx, release, objs); err != nil {
		return err
	}
	prev, err := c.entries(ctx, release)
	if err != nil {
		return err
	}
	next := make([]convoyv1alpha1.InventoryEntry, 0, len(objs))
	for _, obj := range objs {
		next = append(next, Entry(obj, r.Ref))
	}
	return c.Applier.SetInventory(ctx, release, MergeEntries(prev, next))
}

// entries are the inventory's entries now.
func (c *Controller) entries(ctx context.Context, release *convoyv1alpha1.Release) ([]convoyv1alpha1.InventoryEntry, error) {
	inv, err := c.Applier.Convoy.ConvoyV1alpha1().ReleaseInventories(release.Namespace).Get(ctx, release.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return inv.Spec.Entries, nil
}

// advance looks at the wave the rollout holds at: Healthy as assessed for
// r, the next wave; Degraded, the rollout fails; else it holds on.
func (c *Controller) advance(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render) (time.Duration, error) {
	w := release.Status.Rollout.Wave
	inv, err := c.Applier.Convoy.ConvoyV1alpha1().ReleaseInventories(release.Namespace).Get(ctx, release.Name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	states := map[convoyv1alpha1.ObjectKey]convoyv1alpha1.InventoryEntryStatus{}
	for _, s := range inv.Status.Entries {
		states[s.ObjectKey] = s
	}
	for _, obj := range objectsOf(r, w, "") {
		s := states[Entry(obj, r.Ref).ObjectKey]
		switch {
		case s.AssessedRenderRef != r.Ref:
			return HoldPoll, nil
		case s.State == convoyv1alpha1.HealthDegraded:
			klog.FromContext(ctx).Info("Rollout failed: an object of the wave is Degraded", "release", klog.KObj(release), "wave", w, "object", s.Describe(), "message", s.Message)
			return 0, c.Applier.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) {
				st.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutFailed, Wave: w}
			})
		case s.State != convoyv1alpha1.HealthHealthy:
			return HoldPoll, nil
		}
	}
	ws := waves(r)
	i := slices.Index(ws, w)
	if i < 0 || i == len(ws)-1 {
		return 0, c.finish(ctx, release, r, w)
	}
	return c.applyWave(ctx, release, r, ws, ws[i+1])
}

// finish applies the PostSync hooks and records the render applied.
func (c *Controller) finish(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render, w int32) error {
	if err := c.applyStep(ctx, release, r, objectsOf(r, 0, convoyv1alpha1.HookPostSync)); err != nil {
		return err
	}
	applied := c.Applier.Record(r.Ref)
	klog.FromContext(ctx).Info("Render applied", "release", klog.KObj(release), "renderRef", r.Ref)
	return c.Applier.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) {
		st.LastApplied = applied
		st.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutComplete, Wave: w}
	})
}

// heal applies the render applied last once more, all of it: what a sync
// request of the drift loop (automatic mode) asks for.
func (c *Controller) heal(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render) error {
	if err := c.Applier.ApplyObjects(ctx, release, r.Objects); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Render applied again", "release", klog.KObj(release), "renderRef", r.Ref)
	applied := c.Applier.Record(r.Ref)
	return c.Applier.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) { st.LastApplied = applied })
}

// recordHealthy records lastHealthy once the rollout of the render applied
// is Complete and the observer finds the Release Healthy at its generation.
func (c *Controller) recordHealthy(ctx context.Context, release *convoyv1alpha1.Release) error {
	st := release.Status
	if st.LastApplied == nil || st.Rollout == nil || st.Rollout.Phase != convoyv1alpha1.RolloutComplete {
		return nil
	}
	if st.LastHealthy != nil && st.LastHealthy.RenderRef == st.LastApplied.RenderRef {
		return nil
	}
	healthy := meta.FindStatusCondition(st.Conditions, convoyv1alpha1.ConditionHealthy)
	if healthy == nil || healthy.Status != metav1.ConditionTrue || healthy.ObservedGeneration != release.Generation {
		return nil
	}
	record := c.Applier.Record(st.LastApplied.RenderRef)
	if err := c.Applier.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) { st.LastHealthy = record }); err != nil {
		return fmt.Errorf("recording lastHealthy: %w", err)
	}
	return nil
}
