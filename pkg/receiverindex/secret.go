package receiverindex

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// MaxTokenBytes bounds the shared secret of a Receiver: a longer token is
// refused (SecretKeyMissing), and the informer keeps no more of it than
// MaxTokenBytes+1 bytes.
const MaxTokenBytes = 4096

// MinTokenBytes is the shortest shared secret a Receiver takes: its
// status.webhookPath is a SHA-256 of it that whoever may read the Receiver
// sees, against which a short token is guessed offline.
const MinTokenBytes = 16

// secretWatch is the informer of one Receiver's Secret, as the Receiver's
// ServiceAccount.
type secretWatch struct {
	id       cluster.Identity
	secret   string
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	done     chan struct{}

	mu sync.Mutex
	// refused is the last 403 of a list or watch, cleared when a watch
	// starts: a watch that starts follows a list (or is one) that was
	// allowed too.
	refused error
}

// secretState is what a secretWatch knows of its Secret.
type secretState struct {
	id   cluster.Identity
	name string
	// synced: the Secret was listed once.
	synced bool
	// refused is the API server's 403, when the last list or watch got one.
	refused error
	// found: the Secret exists; hasKey: it has the key "token", whose value
	// (cut to MaxTokenBytes+1) is token.
	found, hasKey bool
	token         []byte
}

// startWatch starts the informer of the Secret name in id's namespace, as
// id with kube, until ctx is done or the watch is stopped. changed is
// called when the Secret, or what is known of it, may have changed.
func startWatch(ctx context.Context, kube kubernetes.Interface, id cluster.Identity, name string, changed func()) (*secretWatch, error) {
	w := &secretWatch{id: id, secret: name, done: make(chan struct{})}
	secrets := kube.CoreV1().Secrets(id.Namespace)
	only := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = only
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = only
			wi, err := secrets.Watch(ctx, o)
			if err == nil && w.setRefused(nil) {
				changed()
			}
			return wi, err
		},
	}
	w.informer = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, kube), &corev1.Secret{},
		cache.SharedIndexInformerOptions{ObjectDescription: "Secret " + id.Namespace + "/" + name + " as " + id.UserName()})
	if err := w.informer.SetTransform(keepToken); err != nil {
		return nil, fmt.Errorf("transform of the Secret informer: %w", err)
	}
	if err := w.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !apierrors.IsForbidden(err) {
			cache.DefaultWatchErrorHandler(ctx, r, err)
			return
		}
		// A tenant's refusal: the Receiver's status says it, not the
		// server's error log.
		klog.FromContext(ctx).V(2).Info("Listing or watching the Secret of a Receiver was refused", "secret", klog.KRef(id.Namespace, name), "as", id.UserName(), "err", err)
		w.setRefused(err)
		changed()
	}); err != nil {
		return nil, fmt.Errorf("watch error handler of the Secret informer: %w", err)
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(_, _ any) { changed() },
		DeleteFunc: func(any) { changed() },
	}); err != nil {
		return nil, fmt.Errorf("event handler of the Secret informer: %w", err)
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		var wg sync.WaitGroup
		wg.Go(func() { w.informer.RunWithContext(ctx) })
		// The first list ends in no event when the Secret does not exist.
		select {
		case <-w.informer.HasSyncedChecker().Done():
			changed()
		case <-ctx.Done():
		}
		wg.Wait()
	}()
	return w, nil
}

// stop stops the informer and waits for it.
func (w *secretWatch) stop() {
	w.cancel()
	<-w.done
}

// setRefused sets the refusal of the last list or watch (nil: none), and
// reports whether it was set before.
func (w *secretWatch) setRefused(err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.refused != nil
	w.refused = err
	return was
}

// read returns what the informer knows of the Secret.
func (w *secretWatch) read() secretState {
	s := secretState{id: w.id, name: w.secret, synced: w.informer.HasSynced()}
	w.mu.Lock()
	s.refused = w.refused
	w.mu.Unlock()
	obj, found, err := w.informer.GetStore().GetByKey(w.id.Namespace + "/" + w.secret)
	if secret, ok := obj.(*corev1.Secret); ok && found && err == nil {
		s.found = true
		s.token, s.hasKey = secret.Data[convoyv1alpha1.ReceiverSecretKey]
	}
	return s
}

// keepToken is the transform of the Secret informers: of a Secret, only
// its name and the beginning of its token, MaxTokenBytes+1 bytes at most,
// copied: enough to tell a token that is too long.
func keepToken(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	out := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion,
	}}
	if token, ok := s.Data[convoyv1alpha1.ReceiverSecretKey]; ok {
		out.Data = map[string][]byte{convoyv1alpha1.ReceiverSecretKey: bytes.Clone(token[:min(len(token), MaxTokenBytes+1)])}
	}
	return out, nil
}
