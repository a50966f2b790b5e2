// Package receiverindex holds in memory the Receivers that are Ready, for
// the listener of webhook deliveries (pkg/receiver), which finds the
// Receiver of a delivery's path with Lookup and no I/O; and it writes the
// status of every Receiver: status.webhookPath and the Ready condition.
//
// # Tenancy
//
// The Receivers of every namespace are watched as convoy-apiserver itself,
// which reads no Secret. The Secret spec.secretRef.name of a Receiver's
// namespace, whose key "token" is the shared secret, is read as the
// Receiver's ServiceAccount: spec.serviceAccountName, or
// Config.DefaultServiceAccount when it is empty, impersonated
// (system:serviceaccount:NAMESPACE:NAME), as the inputs of a Release are
// read as its ServiceAccount (pkg/cluster). So a Receiver holds only a
// Secret that its namespace's owners let its ServiceAccount read, and
// convoy-apiserver may impersonate only the ServiceAccounts of the
// namespaces that granted it (cluster.ImpersonationClusterRole).
//
// # The Secrets
//
// Each Receiver has one informer of its Secret alone: the Secrets of its
// namespace with the field selector metadata.name=NAME, listed and watched
// as its ServiceAccount, which therefore needs list and watch of that
// Secret (a Role with resourceNames: [NAME] grants both: a list or watch
// with that field selector is authorized for the one name). The informer
// keeps the token only, at most MaxTokenBytes+1 of it, not the Secret. It
// starts when the Receiver appears, starts again when spec.secretRef or
// spec.serviceAccountName changes, and stops when the Receiver goes. A
// delivery costs no read of the cluster.
//
// # Ready
//
// A Receiver is Ready, and in the index, when its selector is valid and
// its Secret holds a token of MinTokenBytes to MaxTokenBytes bytes. Its path,
// WebhookPath, is derived from its namespace, name, uid and token: the
// same on every replica and across restarts, unguessable without the
// token, and a new one when the token changes. The status is applied
// (field manager convoy-receiver) only when it differs from the one the
// informer shows.
package receiverindex

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions"
	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
)

// Config configures an Index.
type Config struct {
	// Convoy is convoy-apiserver's own client: the Receivers are watched,
	// and their status written, with it.
	Convoy convoyclient.Interface
	// KubeFor gives the clientset of a ServiceAccount on the local cluster,
	// impersonating it (cluster.Provider.KubeAs): a Receiver's Secret is
	// read with it.
	KubeFor func(cluster.Identity) (kubernetes.Interface, error)
	// DefaultServiceAccount is the ServiceAccount a Receiver without
	// spec.serviceAccountName reads its Secret as. Default
	// cluster.DefaultServiceAccount.
	DefaultServiceAccount string
	// Resync is the resync period of the Receivers' informer: every
	// Receiver is looked at again that often (0: never).
	Resync time.Duration
	// Clock gives the lastTransitionTime of the Ready condition. Default
	// the real clock.
	Clock clock.PassiveClock
}

// Index is the index of Ready Receivers by path, and the writer of the
// status of Receivers. Lookup is safe for concurrent use; Run is called
// once.
type Index struct {
	cfg       Config
	factory   convoyinformers.SharedInformerFactory
	receivers cache.SharedIndexInformer
	lister    convoylisters.ReceiverLister
	queue     workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu     sync.RWMutex
	byPath map[string]Entry
	pathOf map[cache.ObjectName]string

	// watches, written and waiting are the worker's alone.
	watches map[cache.ObjectName]*secretWatch
	// written is the status last applied to each Receiver, until the
	// informer shows the Receiver it was applied to changed.
	written map[cache.ObjectName]written
	// waiting are the Receivers of the first list whose Secret is not known
	// yet; synced is set once there are none.
	waiting map[cache.ObjectName]bool
	synced  atomic.Bool
	// watching counts the Secret watches that run.
	watching atomic.Int64
}

var _ Lookup = &Index{}

// New returns an Index of the Receivers cfg.Convoy sees. It does no I/O:
// Run starts the informers.
func New(cfg Config) *Index {
	if cfg.DefaultServiceAccount == "" {
		cfg.DefaultServiceAccount = cluster.DefaultServiceAccount
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	factory := convoyinformers.NewSharedInformerFactoryWithOptions(cfg.Convoy, cfg.Resync,
		convoyinformers.WithTransform(stripManagedFields))
	inf := factory.Convoy().V1alpha1().Receivers()
	i := &Index{
		cfg:       cfg,
		factory:   factory,
		receivers: inf.Informer(),
		lister:    inf.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "receivers"}),
		byPath:  map[string]Entry{},
		pathOf:  map[cache.ObjectName]string{},
		watches: map[cache.ObjectName]*secretWatch{},
		written: map[cache.ObjectName]written{},
	}
	return i
}

// stripManagedFields drops what the index never reads of a Receiver.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Run watches the Receivers and their Secrets, keeps the index and writes
// their status until ctx is done. It returns nil then, or an error when
// the informer could not be set up.
func (i *Index) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("receiverindex")
	ctx = klog.NewContext(ctx, logger)
	defer i.queue.ShutDown()
	enqueue := func(obj any) {
		if name, err := cache.DeletionHandlingObjectToName(obj); err == nil {
			i.queue.Add(name)
		}
	}
	if _, err := i.receivers.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("receiverindex: event handler: %w", err)
	}
	i.factory.Start(ctx.Done())
	defer i.factory.Shutdown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, i.receivers.HasSynced) {
		return nil
	}
	all, err := i.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("receiverindex: list Receivers: %w", err)
	}
	waiting := make(map[cache.ObjectName]bool, len(all))
	for _, r := range all {
		waiting[cache.MetaObjectToName(r)] = true
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		i.waiting = waiting
		i.settle(cache.ObjectName{})
		wait.UntilWithContext(ctx, i.work, time.Second)
	})
	logger.Info("Watching Receivers", "receivers", len(all))
	<-ctx.Done()
	i.queue.ShutDown()
	wg.Wait()
	for key := range i.watches {
		i.stopWatch(key)
	}
	return nil
}

// HasSynced reports whether the index holds every Receiver that was Ready
// when Run started: the Receivers are listed and the Secret of each of
// them was listed, or refused.
func (i *Index) HasSynced() bool {
	return i.receivers.HasSynced() && i.synced.Load()
}

// Lookup returns the entry of the Ready Receiver whose status.webhookPath
// is path. The entry is shared: its Token and Events must not be modified.
func (i *Index) Lookup(path string) (Entry, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	e, ok := i.byPath[path]
	return e, ok
}

// work syncs the Receivers of the queue, one at a time, until it shuts
// down.
func (i *Index) work(ctx context.Context) {
	for {
		key, quit := i.queue.Get()
		if quit {
			return
		}
		err := i.sync(ctx, key)
		switch {
		case err == nil:
			i.queue.Forget(key)
		case ctx.Err() != nil:
			i.queue.Forget(key)
		default:
			klog.FromContext(ctx).Error(err, "Syncing Receiver failed; retrying", "receiver", key)
			i.queue.AddRateLimited(key)
		}
		i.queue.Done(key)
	}
}

// sync brings the index and the status of the Receiver key up to date with
// what the informers show.
func (i *Index) sync(ctx context.Context, key cache.ObjectName) error {
	r, err := i.lister.Receivers(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		i.forget(ctx, key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Receiver %s: %w", key, err)
	}
	v, known, err := i.verdictOf(ctx, key, r)
	if err != nil {
		return err
	}
	if !known {
		return nil // the Secret's first list is under way; its end enqueues key
	}
	i.put(key, v.entry)
	i.settle(key) // after put: HasSynced promises the entry
	if err := i.writeStatus(ctx, r, v); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("apply the status of Receiver %s: %w", key, err)
	}
	return nil
}

// verdictOf returns the verdict on r, the Receiver key, and whether it is
// known yet (see judge).
func (i *Index) verdictOf(ctx context.Context, key cache.ObjectName, r *convoyv1alpha1.Receiver) (verdict, bool, error) {
	if r.Spec.SecretRef.Name == "" { // the CRD refuses it; a field selector of no name would list every Secret
		if i.watches[key] != nil {
			i.stopWatch(key)
		}
		return notReady(ReasonSecretNotFound, "spec.secretRef.name names no Secret"), true, nil
	}
	w, err := i.watchOf(ctx, key, r)
	if err != nil {
		return verdict{}, false, err
	}
	v, known := judge(r, w.read())
	return v, known, nil
}

// watchOf returns the Secret watch of r, starting it, or starting it again
// when r names another Secret or ServiceAccount.
func (i *Index) watchOf(ctx context.Context, key cache.ObjectName, r *convoyv1alpha1.Receiver) (*secretWatch, error) {
	sa := r.Spec.ServiceAccountName
	if sa == "" {
		sa = i.cfg.DefaultServiceAccount
	}
	id := cluster.Identity{Namespace: r.Namespace, Name: sa}
	w := i.watches[key]
	if w != nil && w.id == id && w.secret == r.Spec.SecretRef.Name {
		return w, nil
	}
	if w != nil {
		i.stopWatch(key)
	}
	kube, err := i.cfg.KubeFor(id)
	if err != nil {
		return nil, fmt.Errorf("clients of %s: %w", id, err)
	}
	w, err = startWatch(ctx, kube, id, r.Spec.SecretRef.Name, func() { i.queue.Add(key) })
	if err != nil {
		return nil, err
	}
	i.watches[key] = w
	i.watching.Add(1)
	klog.FromContext(ctx).V(2).Info("Watching the Secret of a Receiver", "receiver", key, "secret", w.secret, "as", id.UserName())
	return w, nil
}

// forget drops the Receiver key, which is gone: its entry and its watch.
func (i *Index) forget(ctx context.Context, key cache.ObjectName) {
	i.put(key, nil)
	i.settle(key)
	delete(i.written, key)
	if i.watches[key] != nil {
		i.stopWatch(key)
		klog.FromContext(ctx).V(2).Info("Stopped watching the Secret of a Receiver that is gone", "receiver", key)
	}
}

// stopWatch stops the Secret watch of key.
func (i *Index) stopWatch(key cache.ObjectName) {
	i.watches[key].stop()
	delete(i.watches, key)
	i.watching.Add(-1)
}

// put makes e the entry of key; nil: key has none.
func (i *Index) put(key cache.ObjectName, e *Entry) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if old, ok := i.pathOf[key]; ok {
		delete(i.byPath, old)
		delete(i.pathOf, key)
	}
	if e != nil {
		i.byPath[e.Path] = *e
		i.pathOf[key] = e.Path
	}
}

// settle notes that the Secret of key is known (or key is gone); once every
// Receiver of the first list is, the index has synced.
func (i *Index) settle(key cache.ObjectName) {
	if i.waiting == nil {
		return
	}
	delete(i.waiting, key)
	if len(i.waiting) == 0 {
		i.waiting = nil
		i.synced.Store(true)
	}
}
