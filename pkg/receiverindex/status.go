package receiverindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// receiver: the reasons of this package show in the Ready condition of a
// Receiver.
var receiver = []failure.Where{failure.Receiver}

// Reasons of the Ready condition of a Receiver.
var (
	ReasonReady = failure.Declare(failure.Reason{
		Name: "Ready", Class: failure.ClassOutcome, Shows: receiver,
		Means:  "the Receiver's Secret holds a token and its selector is valid: deliveries POSTed to status.webhookPath are accepted",
		Action: "none: configure the sender with the path and the token",
	})
	ReasonSecretNotFound = failure.Declare(failure.Reason{
		Name: "SecretNotFound", Class: failure.ClassNotFound, Shows: receiver,
		Means:  "the Secret spec.secretRef names does not exist in the Receiver's namespace",
		Action: "create the Secret, its shared secret under the key token, or correct spec.secretRef",
	})
	ReasonSecretKeyMissing = failure.Declare(failure.Reason{
		Name: "SecretKeyMissing", Class: failure.ClassInvalid, Shows: receiver,
		Means:  "the Receiver's Secret has no key token, or its value is shorter than 16 bytes or longer than 4096",
		Action: "put a random shared secret of 16 to 4096 bytes under the key token of the Secret (openssl rand -hex 32 makes one), and the same at the sender",
	})
	ReasonSecretForbidden = failure.Declare(failure.Reason{
		Name: "SecretForbidden", Class: failure.ClassForbidden, Shows: receiver,
		Means:  "the Receiver's ServiceAccount may not list and watch its Secret, or the namespace has not granted convoy-apiserver the impersonation of that ServiceAccount",
		Action: "run the commands the message names: a Role that allows list and watch of the Secret, bound to the ServiceAccount, or the RoleBinding of impersonation",
	})
	ReasonInvalidSelector = failure.Declare(failure.Reason{
		Name: "InvalidSelector", Class: failure.ClassInvalid, Shows: receiver,
		Means:  "spec.releases is not a valid label selector",
		Action: "correct spec.releases; the message names what is wrong",
	})
)

// WebhookPath is the path of a Receiver's deliveries: "/hook/" and the hex
// SHA-256 of "convoy-receiver", its namespace, name and uid and its token,
// each followed by a NUL byte but the token.
func WebhookPath(namespace, name string, uid types.UID, token []byte) string {
	h := sha256.New()
	for _, part := range []string{"convoy-receiver", namespace, name, string(uid)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(token)
	return "/hook/" + hex.EncodeToString(h.Sum(nil))
}

// verdict is what a Receiver is: its entry when it is Ready, the reason
// and message of its Ready condition.
type verdict struct {
	entry   *Entry
	reason  string
	message string
}

// notReady is a verdict of reason, its message bounded.
func notReady(reason, format string, args ...any) verdict {
	return verdict{reason: reason, message: truncate.String(fmt.Sprintf(format, args...), truncate.Condition)}
}

// judge returns the verdict on r, whose Secret s is; false when it depends
// on a Secret not listed yet.
func judge(r *convoyv1alpha1.Receiver, s secretState) (verdict, bool) {
	selector, err := metav1.LabelSelectorAsSelector(r.Spec.Releases.AsMetav1())
	if err != nil {
		return notReady(ReasonInvalidSelector, "spec.releases is not a valid label selector: %v", err), true
	}
	secret := convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: r.Namespace, Name: s.name}.Describe()
	key := convoyv1alpha1.ReceiverSecretKey
	switch {
	case s.refused != nil:
		return refusal(r, s, secret), true
	case !s.synced:
		return verdict{}, false
	case !s.found:
		return notReady(ReasonSecretNotFound, "%s not found (read as %s)", secret, s.id), true
	case !s.hasKey:
		return notReady(ReasonSecretKeyMissing, "%s has no key %q", secret, key), true
	case len(s.token) == 0:
		return notReady(ReasonSecretKeyMissing, "key %q of %s is empty", key, secret), true
	case len(s.token) < MinTokenBytes:
		return notReady(ReasonSecretKeyMissing, "key %q of %s is %d bytes: a shared secret needs at least %d (openssl rand -hex 32 makes one)", key, secret, len(s.token), MinTokenBytes), true
	case len(s.token) > MaxTokenBytes:
		return notReady(ReasonSecretKeyMissing, "key %q of %s is longer than %d bytes", key, secret, MaxTokenBytes), true
	}
	return verdict{
		entry: &Entry{
			Namespace: r.Namespace, Name: r.Name, UID: r.UID, Generation: r.Generation,
			Type:     webhook.Type(r.Spec.Type),
			Events:   slices.Clone(r.Spec.Events),
			Releases: selector,
			Token:    s.token,
			Path:     WebhookPath(r.Namespace, r.Name, r.UID, s.token),
		},
		reason:  ReasonReady,
		message: "deliveries POSTed to status.webhookPath are accepted",
	}, true
}

// refusal is the verdict on r when the API server refused the list or
// watch of its Secret: the message names what grants it.
func refusal(r *convoyv1alpha1.Receiver, s secretState, secret string) verdict {
	if f, ok := cluster.ImpersonationRefused(s.refused, s.id); ok {
		return notReady(ReasonSecretForbidden, "%s", f.Message)
	}
	ns := r.Namespace
	return notReady(ReasonSecretForbidden,
		"%s may not list and watch %s; grant it with "+
			"kubectl create role %s --namespace %s --verb list,watch --resource secrets --resource-name %s && "+
			"kubectl create rolebinding %s --namespace %s --role %s --serviceaccount %s:%s",
		s.id, secret, r.Name, ns, s.name, r.Name, ns, r.Name, ns, s.id.Name)
}

// written is a status applied to a Receiver, and the resourceVersion of
// the Receiver the informer showed then (basis).
type written struct {
	basis, path     string
	generation      int64
	status          metav1.ConditionStatus
	reason, message string
}

// writeStatus applies the status of r that v says, unless r shows it
// already or it was applied already to r as the informer shows it.
func (i *Index) writeStatus(ctx context.Context, r *convoyv1alpha1.Receiver, v verdict) error {
	status, path := metav1.ConditionFalse, ""
	if v.entry != nil {
		status, path = metav1.ConditionTrue, v.entry.Path
	}
	old := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionReady)
	if old != nil && r.Status.ObservedGeneration == r.Generation && r.Status.WebhookPath == path &&
		old.Status == status && old.Reason == v.reason && old.Message == v.message && old.ObservedGeneration == r.Generation {
		return nil
	}
	// The informer may not show the last apply yet: an event of the
	// Secret can come first.
	key := cache.MetaObjectToName(r)
	now := written{basis: r.ResourceVersion, generation: r.Generation, path: path, status: status, reason: v.reason, message: v.message}
	if last, ok := i.written[key]; ok && last == now {
		return nil
	}
	since := metav1.NewTime(i.cfg.Clock.Now())
	if old != nil && old.Status == status {
		since = old.LastTransitionTime
	}
	next := convoyapply.ReceiverStatus().WithObservedGeneration(r.Generation).
		WithConditions(metav1apply.Condition().WithType(convoyv1alpha1.ConditionReady).WithStatus(status).
			WithReason(v.reason).WithMessage(v.message).WithObservedGeneration(r.Generation).WithLastTransitionTime(since))
	if path != "" {
		next.WithWebhookPath(path)
	}
	_, err := i.cfg.Convoy.ConvoyV1alpha1().Receivers(r.Namespace).ApplyStatus(ctx,
		convoyapply.Receiver(r.Name, r.Namespace).WithStatus(next),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerReceiver, Force: true})
	if err != nil {
		delete(i.written, key)
		return err
	}
	i.written[key] = now
	klog.FromContext(ctx).V(2).Info("Wrote the Ready condition of a Receiver", "receiver", klog.KObj(r),
		"status", status, "reason", v.reason, "message", v.message)
	return nil
}
