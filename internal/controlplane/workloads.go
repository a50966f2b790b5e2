//go:build unix

package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KwokNodeAnnotation marks the Nodes that kwok simulates: it keeps them
// Ready and makes the Pods bound to them Running and Ready (and the Pods of
// Jobs Succeeded) without containers.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// DefaultNodeName is the Node that Start creates with Options.Workloads.
const DefaultNodeName = "kwok-node-0"

// workloadBinaries are the binaries Options.Workloads needs in BinDir.
var workloadBinaries = []string{"kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"}

// startWorkloads starts kube-controller-manager (every default controller:
// Deployments get ReplicaSets and Pods, the garbage collector deletes what
// an owner no longer holds), kube-scheduler and kwok, and creates the Node
// DefaultNodeName, so that workloads run as on a cluster. All three use the
// admin kubeconfig and serve nothing (kwok only on a loopback port).
func (c *ControlPlane) startWorkloads(ctx context.Context) error {
	kubeconfig := c.AdminKubeconfig()
	kcm := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*",
		"--service-account-private-key-file=" + c.pki.saSigningKeyFile,
		// Nodes are simulated: no cloud, no CIDRs, and a quick eviction
		// timeout is not wanted either.
		"--allocate-node-cidrs=false",
		"--concurrent-deployment-syncs=10",
	}
	if _, err := c.launch("kube-controller-manager", filepath.Join(c.opts.BinDir, "kube-controller-manager"), kcm, nil); err != nil {
		return err
	}
	scheduler := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
	}
	if _, err := c.launch("kube-scheduler", filepath.Join(c.opts.BinDir, "kube-scheduler"), scheduler, nil); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	// The Stages hack/testbin.sh took from kwok's module (Nodes Ready, Pods
	// Running and Ready at once, Pods of Jobs Succeeded); with --config,
	// ~/.kwok is not read.
	kwok := []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + filepath.Join(c.opts.BinDir, "kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--node-ip=127.0.0.1",
		// Heartbeats by Lease, as kubelets send them: without one the
		// node-lifecycle controller finds the Node stale after 40s and
		// marks its Pods not Ready.
		"--node-lease-duration-seconds=40",
		"--node-port=" + strconv.Itoa(port),
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		"--cidr=10.244.0.0/16",
	}
	if _, err := c.launch("kwok", filepath.Join(c.opts.BinDir, "kwok"), kwok, nil); err != nil {
		return err
	}
	began := time.Now()
	if err := c.AddNode(ctx, DefaultNodeName, nil); err != nil {
		return err
	}
	c.logf("kube-controller-manager, kube-scheduler and kwok started; Node %s Ready (%s)", DefaultNodeName, time.Since(began).Round(100*time.Millisecond))
	return nil
}

// AddNode creates a Node that kwok simulates, with labels, and waits until
// it is Ready. A Node that exists already is kept.
func (c *ControlPlane) AddNode(ctx context.Context, name string, labels map[string]string) error {
	kube, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if len(name) <= 63 {
		node.Labels["kubernetes.io/hostname"] = name
	}
	for k, v := range labels {
		node.Labels[k] = v
	}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Node %s: %w", name, err)
	}
	return poll(ctx, time.Minute, 200*time.Millisecond, "Node "+name+" Ready", func(ctx context.Context) error {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return notYet("%w", err)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return notYet("Node %s is not Ready yet (is kwok running? see %s)", name, filepath.Join(c.logDir, "kwok.log"))
	})
}

// hasWorkloadBinaries says whether BinDir holds what Options.Workloads needs.
func hasWorkloadBinaries(binDir string) error {
	for _, b := range workloadBinaries {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("binary %s: %w (build it with hack/testbin.sh)", b, err)
		}
	}
	return nil
}
