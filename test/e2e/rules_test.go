//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// The default rule sets on objects their controllers write on the real
// control plane: kube-controller-manager's HPA, Deployment and Job
// controllers, and a custom resource of an installed CRD.

const hpaManifests = `apiVersion: apps/v1
kind: Deployment
metadata: {name: idle, labels: {app: idle}}
spec:
  replicas: 0
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec: {containers: [{name: app, image: registry.example/idle:1}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: idle}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: idle}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: orphan}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nope}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: orphan-v1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nope}
  minReplicas: 1
  maxReplicas: 3
  targetCPUUtilizationPercentage: 80
`

// dumpObjects prints the objects of kind in namespace as YAML when
// CONVOY_E2E_DUMP is set: how the fixtures of pkg/health/testdata were
// taken from this control plane.
func dumpObjects(t *testing.T, namespace string, kinds ...string) {
	t.Helper()
	if os.Getenv("CONVOY_E2E_DUMP") == "" {
		return
	}
	for _, kind := range kinds {
		t.Logf("%s:\n%s", kind, mustKubectl(t, "", "", "get", kind, "-n", namespace, "-o", "yaml"))
	}
}

// TestHealthRulesHPA: an HPA whose target does not exist is not Healthy,
// with the HPA controller's message, in autoscaling/v2 and autoscaling/v1
// (whose conditions are an annotation); an HPA whose target is scaled to
// zero is Suspended.
func TestHealthRulesHPA(t *testing.T) {
	ns := newNamespace(t)
	newDriftRelease(t, ns, "scale", map[string]string{"hpa.yaml": hpaManifests}, assessed(0))
	newStandIn(t).apply(ns, "scale")

	want := map[string]struct {
		state   convoyv1alpha1.HealthState
		message string
	}{
		"orphan":    {convoyv1alpha1.HealthProgressing, `cannot scale the target: FailedGetScale (the HPA controller was unable to get the target's current scale: deployments.apps "nope" not found)`},
		"orphan-v1": {convoyv1alpha1.HealthProgressing, `cannot scale the target: FailedGetScale (the HPA controller was unable to get the target's current scale: deployments.apps "nope" not found)`},
		"idle":      {convoyv1alpha1.HealthSuspended, "autoscaling is disabled: the target is scaled to zero"},
	}
	for name, w := range want {
		eventually(t, "HPA "+name+" assessed", func(ctx context.Context) error {
			e, err := findEntryStatus(t, ns, "scale", "HorizontalPodAutoscaler", name)
			if err != nil {
				return err
			}
			if e.State != w.state || !strings.HasPrefix(e.Message, w.message) {
				return fmt.Errorf("%s: %s", e.State, e.Message)
			}
			return nil
		})
	}
	dumpObjects(t, ns, "horizontalpodautoscalers.v2.autoscaling", "horizontalpodautoscalers.v1.autoscaling")

	r := waitHealthy(t, ns, "scale", metav1.ConditionFalse, "Progressing")
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
	assert.Contains(t, c.Message, `deployments.apps "nope" not found`)
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 4, Healthy: 1, Progressing: 2, Suspended: 1}, r.Status.HealthSummary)

	// The plugin shows the HPA's message.
	out := kubectlConvoy(t, "", "release", "health", "scale", "-n", ns)
	assert.Contains(t, out.stdout, "FailedGetScale")
}

// TestHealthSuspendedPausedDeployment: a Deployment paused before its
// rollout is done is Suspended, counted in healthSummary.suspended, and
// does not turn Degraded when the deadline passes; resumed, its deadline
// starts then.
func TestHealthSuspendedPausedDeployment(t *testing.T) {
	ns := newNamespace(t)
	paused := strings.Replace(fmt.Sprintf(deploymentManifest, "1.0"), "  replicas: 2\n", "  replicas: 2\n  paused: true\n", 1)
	require.Contains(t, paused, "paused: true")
	newDriftRelease(t, ns, "web", map[string]string{"deployment.yaml": paused}, assessed(3*time.Second))
	newStandIn(t).apply(ns, "web")

	r := waitHealthy(t, ns, "web", metav1.ConditionFalse, "Suspended")
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 1, Suspended: 1}, r.Status.HealthSummary)
	assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy).Message,
		"Deployment.apps "+ns+"/web is Suspended: the rollout is paused (spec.paused)")
	e := entryStatus(t, ns, "web", "Deployment", "web")
	assert.Nil(t, e.FirstUnhealthy, "no deadline runs while Suspended")
	dumpObjects(t, ns, "deployments")

	// Three deadlines later it is still Suspended, not Degraded.
	time.Sleep(9 * time.Second)
	e = entryStatus(t, ns, "web", "Deployment", "web")
	assert.Equal(t, convoyv1alpha1.HealthSuspended, e.State, e.Message)
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Suspended")

	// Resumed: the rollout goes on (no Node runs its Pods here), Progressing
	// from now, Degraded a deadline later.
	resumed := time.Now().Add(-time.Second)
	mustKubectl(t, "", "", "rollout", "resume", "deployment/web", "-n", ns)
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")
	e = entryStatus(t, ns, "web", "Deployment", "web")
	require.NotNil(t, e.FirstUnhealthy)
	assert.False(t, e.FirstUnhealthy.Time.Before(resumed.Truncate(time.Second)), "the deadline starts when it is resumed: %s", e.FirstUnhealthy)
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Degraded")
}
