package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
)

// receiverName names the demo's Receiver, its Secret and the Role that
// lets podinfo-deployer read that Secret.
const receiverName = "git-push"

// demoReceiver creates the Receiver demo/git-push (generic-hmac) of the
// Releases of demo, its token in the Secret demo/git-push (random, for
// this run), and the Role and RoleBinding that let the ServiceAccount
// podinfo-deployer list and watch that Secret alone: the Receiver reads it
// as that ServiceAccount.
func demoReceiver(ctx context.Context, cp *controlplane.ControlPlane) error {
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	convoy, err := convoyclient.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	const ns, sa = "demo", "podinfo-deployer"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: receiverName},
		Data: map[string][]byte{convoyv1alpha1.ReceiverSecretKey: []byte(hex.EncodeToString(token))}}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Secret demo/%s: %w", receiverName, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: receiverName + "-token"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{receiverName}, Verbs: []string{"list", "watch"}}}}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Role demo/%s: %w", role.Name, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the RoleBinding demo/%s: %w", binding.Name, err)
	}
	receiver := &convoyv1alpha1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: receiverName},
		Spec: convoyv1alpha1.ReceiverSpec{Type: convoyv1alpha1.ReceiverGenericHMAC, SecretRef: convoyv1alpha1.LocalObjectReference{Name: receiverName},
			ServiceAccountName: sa, Releases: convoyv1alpha1.LabelSelector{}}}
	if _, err := convoy.ConvoyV1alpha1().Receivers(ns).Create(ctx, receiver, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Receiver demo/%s: %w", receiverName, err)
	}
	return nil
}

// printReceiver tells how to send the Receiver a delivery for the Git
// example's branch main, signed as a CI job would sign it.
func printReceiver(cp *controlplane.ControlPlane, dir, gitExample string) {
	p := cp.ConvoyAPIServer()
	if p == nil || p.ReceiverURL() == "" {
		return
	}
	fmt.Printf("\nThe Receiver demo/%s refreshes the Releases of demo that a signed delivery names; after a commit to %s:\n", receiverName, gitExample)
	fmt.Printf("  body='{\"repositories\":[\"%s\"],\"refs\":[\"refs/heads/main\"]}'\n", gitExample)
	fmt.Printf("  token=$(kubectl get secret %s -n demo -o jsonpath='{.data.token}' | base64 -d)\n", receiverName)
	fmt.Printf("  sig=$(printf '%%s' \"$body\" | openssl dgst -sha256 -hmac \"$token\" -r | cut -d' ' -f1)\n")
	fmt.Printf("  curl -sS -w '%%{http_code}\\n' --cacert %s -H \"X-Signature-256: sha256=$sig\" -d \"$body\" \\\n", filepath.Join(dir, "pki", "convoy-ca.crt"))
	fmt.Printf("    %s$(kubectl get receiver %s -n demo -o jsonpath='{.status.webhookPath}')\n", p.ReceiverURL(), receiverName)
}
