//go:build unix

package controlplane

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// With Workloads, a Deployment gets Pods that become Ready on the simulated
// Node, and a namespace whose node selector no Node matches keeps its Pods
// Pending until a Node with that label is added.
func TestWorkloadsRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Dir: t.TempDir(), BinDir: binDir(t), Workloads: true, Out: os.Stderr})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cp.Stop()) })
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	require.NoError(t, err)

	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apart",
		Annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=apart"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, ns := range []string{"default", "apart"} {
		_, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}}},
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	available := func(ns string) func(context.Context) error {
		return func(ctx context.Context) error {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return notYet("%w", err)
			}
			if d.Status.AvailableReplicas != 2 {
				return notYet("%d of 2 replicas available", d.Status.AvailableReplicas)
			}
			return nil
		}
	}
	require.NoError(t, poll(ctx, 2*time.Minute, 200*time.Millisecond, "Deployment default/web available", available("default")))

	// Pending for want of a Node of the pool (the scheduler found none),
	// then Ready on one.
	require.NoError(t, poll(ctx, 2*time.Minute, 200*time.Millisecond, "the Pods of apart/web unschedulable", func(ctx context.Context) error {
		pods, err := kube.CoreV1().Pods("apart").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return notYet("%w", err)
		}
		if len(pods.Items) != 2 {
			return notYet("%d of 2 Pods", len(pods.Items))
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				return fmt.Errorf("Pod apart/%s was bound to Node %s, which is not of the pool", p.Name, p.Spec.NodeName)
			}
			if !unschedulable(&p) {
				return notYet("Pod apart/%s is not found unschedulable yet: %+v", p.Name, p.Status.Conditions)
			}
		}
		return nil
	}))
	d, err := kube.AppsV1().Deployments("apart").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Zero(t, d.Status.AvailableReplicas, fmt.Sprintf("%+v", d.Status))
	require.NoError(t, cp.AddNode(ctx, "apart-node", map[string]string{"pool": "apart"}))
	require.NoError(t, poll(ctx, 2*time.Minute, 200*time.Millisecond, "Deployment apart/web available", available("apart")))
}

// unschedulable says whether the scheduler found no Node for p.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}
