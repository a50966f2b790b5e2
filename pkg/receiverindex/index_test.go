package receiverindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	convoyfake "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

const (
	ns         = "team-a"
	defaultSA  = "receivers"
	secretName = "hook-token"
)

var start = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

type fixture struct {
	convoy *convoyfake.Clientset
	kube   *kubefake.Clientset
	clock  *clocktesting.FakePassiveClock
	idx    *Index

	mu  sync.Mutex
	ids []cluster.Identity
}

func receiverObj(name, sa string) *convoyv1alpha1.Receiver {
	return &convoyv1alpha1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: convoyv1alpha1.ReceiverSpec{
			Type: convoyv1alpha1.ReceiverGitHub, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secretName},
			ServiceAccountName: sa, Events: []string{"push"},
			Releases: convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
}

func secretObj(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}, Data: data}
}

func token(s string) map[string][]byte {
	return map[string][]byte{convoyv1alpha1.ReceiverSecretKey: []byte(s)}
}

// run starts an Index over the fake clusters holding objs, until the test
// ends; it has synced when run returns.
func run(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return runWith(t, nil, objs...)
}

// runWith is run with setup applied to the fake cluster of Secrets first.
func runWith(t *testing.T, setup func(*kubefake.Clientset), objs ...runtime.Object) *fixture {
	t.Helper()
	var convoyObjs, kubeObjs []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*convoyv1alpha1.Receiver); ok {
			convoyObjs = append(convoyObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{convoy: convoyfake.NewClientset(convoyObjs...), kube: kubefake.NewClientset(kubeObjs...),
		clock: clocktesting.NewFakePassiveClock(start)}
	if setup != nil {
		setup(f.kube)
	}
	f.idx = New(Config{
		Convoy: f.convoy,
		KubeFor: func(id cluster.Identity) (kubernetes.Interface, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.ids = append(f.ids, id)
			return f.kube, nil
		},
		DefaultServiceAccount: defaultSA,
		Clock:                 f.clock,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.idx.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		assert.Zero(t, f.idx.watching.Load(), "every Secret watch stopped")
	})
	require.Eventually(t, f.idx.HasSynced, 5*time.Second, 10*time.Millisecond)
	return f
}

// identities are those KubeFor was asked for, in order.
func (f *fixture) identities() []cluster.Identity {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cluster.Identity(nil), f.ids...)
}

// wait returns the Receiver name once its Ready condition has reason.
func (f *fixture) wait(t *testing.T, name, reason string) (*convoyv1alpha1.Receiver, *metav1.Condition) {
	t.Helper()
	var r *convoyv1alpha1.Receiver
	var c *metav1.Condition
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		var err error
		r, err = f.convoy.ConvoyV1alpha1().Receivers(ns).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		c = meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionReady)
		require.NotNil(t, c)
		assert.Equal(t, reason, c.Reason, c.Message)
	}, 10*time.Second, 10*time.Millisecond)
	return r, c
}

// applies counts the status applies of Receivers.
func (f *fixture) applies() int {
	n := 0
	for _, a := range f.convoy.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType && p.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func (f *fixture) updateSecret(t *testing.T, s *corev1.Secret) {
	t.Helper()
	_, err := f.kube.CoreV1().Secrets(ns).Update(context.Background(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func TestReady(t *testing.T) {
	f := run(t, receiverObj("gh", ""), secretObj(token("s3cret-of-sixteen-bytes")))
	path := WebhookPath(ns, "gh", "uid-gh", []byte("s3cret-of-sixteen-bytes"))
	_, ok := f.idx.Lookup(path)
	assert.True(t, ok, "synced: the Receivers Ready at the start are in the index")
	r, c := f.wait(t, "gh", ReasonReady)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, start, c.LastTransitionTime.UTC())
	assert.Equal(t, int64(1), r.Status.ObservedGeneration)
	assert.Equal(t, path, r.Status.WebhookPath)

	e, ok := f.idx.Lookup(path)
	require.True(t, ok)
	assert.Equal(t, []byte("s3cret-of-sixteen-bytes"), e.Token)
	assert.Equal(t, webhook.GitHub, e.Type)
	assert.Equal(t, []string{"push"}, e.Events)
	assert.Equal(t, Entry{Namespace: ns, Name: "gh", UID: "uid-gh", Generation: 1}, Entry{Namespace: e.Namespace, Name: e.Name, UID: e.UID, Generation: e.Generation})
	assert.True(t, e.Releases.Matches(labels.Set{"app": "web"}))
	assert.False(t, e.Releases.Matches(labels.Set{"app": "db"}))
	_, ok = f.idx.Lookup("/hook/" + strings.Repeat("0", 64))
	assert.False(t, ok)

	assert.Equal(t, []cluster.Identity{{Namespace: ns, Name: defaultSA}}, f.identities(), "the Secret is read as the default ServiceAccount")
	assert.NotContains(t, c.Message, "s3cret-of-sixteen-bytes")
}

func TestNotReady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		edit    func(*convoyv1alpha1.Receiver)
		reason  string
		message string
	}{
		{name: "no Secret", reason: ReasonSecretNotFound, message: "Secret team-a/hook-token not found (read as ServiceAccount team-a/receivers)"},
		{name: "no key", objs: []runtime.Object{secretObj(map[string][]byte{"other": []byte("x")})},
			reason: ReasonSecretKeyMissing, message: `Secret team-a/hook-token has no key "token"`},
		{name: "empty", objs: []runtime.Object{secretObj(token(""))},
			reason: ReasonSecretKeyMissing, message: `key "token" of Secret team-a/hook-token is empty`},
		{name: "too short", objs: []runtime.Object{secretObj(token("short"))},
			reason: ReasonSecretKeyMissing, message: `key "token" of Secret team-a/hook-token is 5 bytes: a shared secret needs at least 16 (openssl rand -hex 32 makes one)`},
		{name: "too long", objs: []runtime.Object{secretObj(token(strings.Repeat("x", MaxTokenBytes+1)))},
			reason: ReasonSecretKeyMissing, message: `key "token" of Secret team-a/hook-token is longer than 4096 bytes`},
		{name: "no Secret named", objs: []runtime.Object{secretObj(token("s3cret-of-sixteen-bytes"))},
			edit:   func(r *convoyv1alpha1.Receiver) { r.Spec.SecretRef.Name = "" },
			reason: ReasonSecretNotFound, message: "spec.secretRef.name names no Secret"},
		{name: "bad selector", objs: []runtime.Object{secretObj(token("s3cret-of-sixteen-bytes"))},
			edit:   func(r *convoyv1alpha1.Receiver) { r.Spec.Releases.MatchLabels = map[string]string{"not a key!": "x"} },
			reason: ReasonInvalidSelector, message: "spec.releases is not a valid label selector: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := receiverObj("gh", "")
			if tc.edit != nil {
				tc.edit(r)
			}
			f := run(t, append(tc.objs, r)...)
			r, c := f.wait(t, "gh", tc.reason)
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Contains(t, c.Message, tc.message)
			assert.NotContains(t, c.Message, "s3cret-of-sixteen-bytes")
			assert.Empty(t, r.Status.WebhookPath)
			f.idx.mu.RLock()
			defer f.idx.mu.RUnlock()
			assert.Empty(t, f.idx.byPath, "no entry")
		})
	}
}

// A Secret created, then rotated: the path follows the token; the old one
// is found no more. The Ready condition keeps its lastTransitionTime while
// it stays True.
func TestSecretRotated(t *testing.T) {
	f := run(t, receiverObj("gh", "deployer"))
	f.wait(t, "gh", ReasonSecretNotFound)

	f.clock.SetTime(start.Add(time.Minute))
	_, err := f.kube.CoreV1().Secrets(ns).Create(context.Background(), secretObj(token("the-first-shared-secret")), metav1.CreateOptions{})
	require.NoError(t, err)
	r, c := f.wait(t, "gh", ReasonReady)
	first := r.Status.WebhookPath
	assert.Equal(t, WebhookPath(ns, "gh", "uid-gh", []byte("the-first-shared-secret")), first)
	assert.Equal(t, start.Add(time.Minute), c.LastTransitionTime.UTC())

	f.clock.SetTime(start.Add(2 * time.Minute))
	f.updateSecret(t, secretObj(token("the-second-shared-secret")))
	second := WebhookPath(ns, "gh", "uid-gh", []byte("the-second-shared-secret"))
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		r, err := f.convoy.ConvoyV1alpha1().Receivers(ns).Get(context.Background(), "gh", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, second, r.Status.WebhookPath)
		_, ok := f.idx.Lookup(second)
		assert.True(t, ok)
	}, 10*time.Second, 10*time.Millisecond)
	_, ok := f.idx.Lookup(first)
	assert.False(t, ok, "the old path is found no more")
	_, c = f.wait(t, "gh", ReasonReady)
	assert.Equal(t, start.Add(time.Minute), c.LastTransitionTime.UTC(), "still True since the first token")
	assert.Equal(t, []cluster.Identity{{Namespace: ns, Name: "deployer"}}, f.identities())
}

// A Receiver deleted: its entry is gone and its Secret watch stopped.
func TestReceiverDeleted(t *testing.T) {
	f := run(t, receiverObj("gh", ""), secretObj(token("s3cret-of-sixteen-bytes")))
	r, _ := f.wait(t, "gh", ReasonReady)
	require.Equal(t, int64(1), f.idx.watching.Load())
	require.NoError(t, f.convoy.ConvoyV1alpha1().Receivers(ns).Delete(context.Background(), "gh", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, ok := f.idx.Lookup(r.Status.WebhookPath)
		return !ok && f.idx.watching.Load() == 0
	}, 5*time.Second, 10*time.Millisecond)
}

// Another ServiceAccount or Secret starts the watch again, as the new
// identity.
func TestWatchRestarted(t *testing.T) {
	other := secretObj(token("the-other-shared-secret"))
	other.Name = "other-token"
	f := run(t, receiverObj("gh", ""), secretObj(token("s3cret-of-sixteen-bytes")), other)
	r, _ := f.wait(t, "gh", ReasonReady)

	r.Spec.ServiceAccountName = "deployer"
	r.Spec.SecretRef.Name = "other-token"
	r.Generation = 2
	_, err := f.convoy.ConvoyV1alpha1().Receivers(ns).Update(context.Background(), r, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		r, err := f.convoy.ConvoyV1alpha1().Receivers(ns).Get(context.Background(), "gh", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, WebhookPath(ns, "gh", "uid-gh", []byte("the-other-shared-secret")), r.Status.WebhookPath)
		assert.Equal(t, int64(2), r.Status.ObservedGeneration)
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []cluster.Identity{{Namespace: ns, Name: defaultSA}, {Namespace: ns, Name: "deployer"}}, f.identities())
	assert.Equal(t, int64(1), f.idx.watching.Load(), "the first watch stopped")
}

// A refused list is SecretForbidden, its message the commands that grant
// it; once granted, the Receiver is Ready.
func TestSecretForbidden(t *testing.T) {
	for _, tc := range []struct {
		name, refusal, message string
	}{
		{"role", `User "system:serviceaccount:team-a:receivers" cannot list resource "secrets" in API group "" in the namespace "team-a"`,
			"ServiceAccount team-a/receivers may not list and watch Secret team-a/hook-token; grant it with " +
				"kubectl create role gh --namespace team-a --verb list,watch --resource secrets --resource-name hook-token && " +
				"kubectl create rolebinding gh --namespace team-a --role gh --serviceaccount team-a:receivers"},
		{"impersonation", `User "system:serviceaccount:convoy:convoy-apiserver" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"`,
			"kubectl create rolebinding " + cluster.ImpersonationClusterRole + " --namespace team-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refuse atomic.Bool
			refuse.Store(true)
			f := runWith(t, func(kube *kubefake.Clientset) {
				kube.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					if !refuse.Load() {
						return false, nil, nil
					}
					return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New(tc.refusal))
				})
			}, receiverObj("gh", ""), secretObj(token("s3cret-of-sixteen-bytes")))
			_, c := f.wait(t, "gh", ReasonSecretForbidden)
			assert.Contains(t, c.Message, tc.message)
			refuse.Store(false)
			f.wait(t, "gh", ReasonReady)
		})
	}
}

// The status is applied once: the informer's events that follow (the
// status written, a Secret or a Receiver changed in nothing that matters)
// apply nothing.
func TestStatusAppliedOnce(t *testing.T) {
	f := run(t, receiverObj("gh", ""), secretObj(token("s3cret-of-sixteen-bytes")))
	r, _ := f.wait(t, "gh", ReasonReady)
	require.Equal(t, 1, f.applies())

	s := secretObj(token("s3cret-of-sixteen-bytes"))
	s.Labels = map[string]string{"touched": "yes"}
	f.updateSecret(t, s)
	r.Labels = map[string]string{"touched": "yes"}
	_, err := f.convoy.ConvoyV1alpha1().Receivers(ns).Update(context.Background(), r, metav1.UpdateOptions{})
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 1, f.applies())

	// The same, without the informers' timing: a Receiver that shows the
	// status is not written.
	require.NoError(t, f.idx.writeStatus(context.Background(), r, verdict{entry: &Entry{Path: r.Status.WebhookPath},
		reason: ReasonReady, message: meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionReady).Message}))
	assert.Equal(t, 1, f.applies())
}

func TestWebhookPath(t *testing.T) {
	p := WebhookPath(ns, "gh", "uid-1", []byte("s3cret-of-sixteen-bytes"))
	assert.Regexp(t, `^/hook/[0-9a-f]{64}$`, p)
	assert.Equal(t, p, WebhookPath(ns, "gh", "uid-1", []byte("s3cret-of-sixteen-bytes")), "stable")
	sum := sha256.Sum256([]byte("convoy-receiver\x00team-a\x00gh\x00uid-1\x00s3cret-of-sixteen-bytes"))
	assert.Equal(t, "/hook/"+hex.EncodeToString(sum[:]), p, "as the API documents it: the same on every replica and version")
	for name, other := range map[string]string{
		"uid":       WebhookPath(ns, "gh", "uid-2", []byte("s3cret-of-sixteen-bytes")),
		"token":     WebhookPath(ns, "gh", "uid-1", []byte("s3cret-of-sixteen-bytes2")),
		"name":      WebhookPath(ns, "gl", "uid-1", []byte("s3cret-of-sixteen-bytes")),
		"namespace": WebhookPath("team-b", "gh", "uid-1", []byte("s3cret-of-sixteen-bytes")),
		"boundary":  WebhookPath(ns, "gh", "uid-1s", []byte("3cret-of-sixteen-bytes")),
	} {
		assert.NotEqual(t, p, other, name)
	}
}

func TestKeepToken(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want map[string][]byte
	}{
		{"token only", map[string][]byte{"token": []byte("s3cret-of-sixteen-bytes"), "other": []byte("x")}, token("s3cret-of-sixteen-bytes")},
		{"cut", token(strings.Repeat("x", 3*MaxTokenBytes)), token(strings.Repeat("x", MaxTokenBytes+1))},
		{"empty", token(""), token("")},
		{"none", map[string][]byte{"other": []byte("x")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := secretObj(tc.data)
			in.Labels = map[string]string{"a": "b"}
			out, err := keepToken(in)
			require.NoError(t, err)
			assert.Equal(t, secretObj(tc.want), out)
		})
	}
	other, err := keepToken("not a Secret")
	require.NoError(t, err)
	assert.Equal(t, "not a Secret", other)
}
