//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	t.Parallel()
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
	t.Parallel()
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

	// Three deadlines later it is still Suspended, not Degraded, after at
	// least three passes (every passInterval, a pass taking up to a second).
	passes := countPasses(t, healthPass, ns, "web")
	passes.waitAtLeast(t, 3, 9*time.Second)
	e = entryStatus(t, ns, "web", "Deployment", "web")
	assert.Equal(t, convoyv1alpha1.HealthSuspended, e.State, e.Message)
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Suspended")

	// Resumed: the rollout goes on (no Node runs its Pods here), Progressing
	// from now, Degraded a deadline later.
	resumed := time.Now().Add(-time.Second)
	mustKubectl(t, "", "", "rollout", "resume", "deployment/web", "-n", ns)
	r = waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 1, Progressing: 1}, r.Status.HealthSummary, "suspended is gone")
	e = entryStatus(t, ns, "web", "Deployment", "web")
	require.NotNil(t, e.FirstUnhealthy)
	assert.False(t, e.FirstUnhealthy.Time.Before(resumed.Truncate(time.Second)), "the deadline starts when it is resumed: %s", e.FirstUnhealthy)
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Degraded")
}

// certificateCRD is a small CustomResourceDefinition of cert-manager's
// Certificate: the kind and version cert-manager serves, its status as a
// subresource, its fields unchecked.
const certificateCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: Certificate, listKind: CertificateList, plural: certificates, singular: certificate}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

const certificateManifest = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls}
spec:
  secretName: web-tls
  dnsNames: [shop.example]
  issuerRef: {name: letsencrypt, kind: ClusterIssuer}
`

// setCertificateStatus writes the status of Certificate web-tls as
// cert-manager would.
func setCertificateStatus(t *testing.T, namespace, status string) {
	t.Helper()
	mustKubectl(t, "", "", "patch", "certificates.cert-manager.io", "web-tls", "-n", namespace,
		"--subresource=status", "--type=merge", "-p", status)
}

// TestHealthRulesCustomResource: a Release whose inventory holds a custom
// resource of an installed CRD (cert-manager's Certificate) follows the
// status its controller writes, from Progressing to Healthy, with the
// default rules; kubectl convoy rules test --release evaluates the same
// rules on a saved object.
func TestHealthRulesCustomResource(t *testing.T) {
	// Not parallel: it creates and deletes a CRD.
	mustKubectl(t, "", certificateCRD, "apply", "-f", "-")
	t.Cleanup(func() { kubectl(t, "", "", "delete", "crd", "certificates.cert-manager.io", "--wait=false") })
	mustKubectl(t, "", "", "wait", "--for=condition=Established", "crd/certificates.cert-manager.io", "--timeout=60s")

	ns := newNamespace(t)
	newDriftRelease(t, ns, "certs", map[string]string{"certificate.yaml": certificateManifest}, assessed(0))
	newStandIn(t).apply(ns, "certs")

	waitEntry := func(state convoyv1alpha1.HealthState, message string) {
		t.Helper()
		eventually(t, fmt.Sprintf("Certificate %s: %s", state, message), func(ctx context.Context) error {
			e, err := findEntryStatus(t, ns, "certs", "Certificate", "web-tls")
			if err != nil {
				return err
			}
			if e.State != state || e.Message != message {
				return fmt.Errorf("%s: %s", e.State, e.Message)
			}
			return nil
		})
	}
	// No status yet: cert-manager has not looked at it.
	waitEntry(convoyv1alpha1.HealthProgressing, "waiting for cert-manager to assess the certificate (no Ready condition yet)")
	r := waitHealthy(t, ns, "certs", metav1.ConditionFalse, "Progressing")
	assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy).Message, "Certificate.cert-manager.io "+ns+"/web-tls is Progressing")

	// Issuing: the readiness controller says the Secret does not exist yet.
	setCertificateStatus(t, ns, `{"status":{"conditions":[
{"type":"Ready","status":"False","reason":"DoesNotExist","message":"Issuing certificate as Secret does not exist","observedGeneration":1,"lastTransitionTime":"2026-12-02T03:00:00Z"},
{"type":"Issuing","status":"True","reason":"DoesNotExist","message":"Issuing certificate as Secret does not exist","observedGeneration":1,"lastTransitionTime":"2026-12-02T03:00:00Z"}]}}`)
	eventually(t, "Certificate issuing", func(ctx context.Context) error {
		e, err := findEntryStatus(t, ns, "certs", "Certificate", "web-tls")
		if err != nil {
			return err
		}
		if e.State != convoyv1alpha1.HealthProgressing || !strings.Contains(e.Message, "Issuing certificate as Secret does not exist") {
			return fmt.Errorf("%s: %s", e.State, e.Message)
		}
		return nil
	})

	// Issued.
	setCertificateStatus(t, ns, `{"status":{"notAfter":"2027-03-02T03:00:00Z","notBefore":"2026-12-02T03:00:00Z","renewalTime":"2027-01-31T03:00:00Z","revision":1,"conditions":[
{"type":"Ready","status":"True","reason":"Ready","message":"Certificate is up to date and has not expired","observedGeneration":1,"lastTransitionTime":"2026-12-02T03:00:05Z"}]}}`)
	waitEntry(convoyv1alpha1.HealthHealthy, "")
	r = waitHealthy(t, ns, "certs", metav1.ConditionTrue, "Healthy")
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 1, Healthy: 1}, r.Status.HealthSummary)

	// The rules the Release selects, offline on saved objects: the live one
	// (Healthy, exit 0) and the one with no status (exit 1).
	dir := t.TempDir()
	live := filepath.Join(dir, "live.yaml")
	require.NoError(t, os.WriteFile(live, []byte(mustKubectl(t, "", "", "get", "certificates.cert-manager.io", "web-tls", "-n", ns, "-o", "yaml")), 0o600))
	fresh := filepath.Join(dir, "fresh.yaml")
	require.NoError(t, os.WriteFile(fresh, []byte(certificateManifest), 0o600))
	out := kubectlConvoy(t, "", "rules", "test", "--release", "certs", "-n", ns, "-f", live)
	assert.Equal(t, 0, out.code, out.String())
	assert.Contains(t, out.stdout, "Certificate.cert-manager.io")
	out = kubectlConvoy(t, "", "rules", "test", "--release", "certs", "-n", ns, "-f", live, "-f", fresh)
	assert.Equal(t, 1, out.code, out.String())
	assert.Contains(t, out.stdout, "rule 0 of GlobalHealthRuleSet convoy-default-cert-manager")
	// A user who may read the namespace's convoy objects but not the
	// cluster-scoped GlobalHealthRuleSets is told so.
	grant(t, ns, "cert-reader", rbacPolicy("convoy.kumodo.io", "releases", "get"), rbacPolicy("convoy.kumodo.io", "healthrulesets", "list"))
	out = kubectlConvoy(t, user(t, "cert-reader"), "rules", "test", "--release", "certs", "-n", ns, "-f", live)
	assert.Equal(t, 2, out.code, out.String())
	assert.Contains(t, out.stderr, "selects GlobalHealthRuleSets, which you may not list")
	// A Release without health assessment has no rules to test.
	newDriftRelease(t, ns, "plain", map[string]string{"certificate.yaml": certificateManifest})
	out = kubectlConvoy(t, "", "rules", "test", "--release", "plain", "-n", ns, "-f", fresh)
	assert.Equal(t, 2, out.code, out.String())
	assert.Contains(t, out.stderr, "has no spec.healthAssessment")
}

// liveWorkloads are built-in workloads for the controllers of the e2e
// control plane (kube-controller-manager, and kwok's Nodes and Pods: Running
// and Ready at once, Pods of Jobs Succeeded); NODE is the namespace's
// label value, which the DaemonSet selects.
const liveWorkloads = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: registry.example/web:1}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {e2e.convoy.kumodo.io/namespace: NODE}
      containers: [{name: agent, image: registry.example/agent:1}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: registry.example/migrate:1}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: none
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: public}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80}]
`

// TestDefaultRulesOnLiveObjects: the default rules on the objects the
// control plane's controllers write, read with kubectl and piped into
// kubectl convoy rules test: what settles is Healthy, what no controller
// here can finish (a PVC of a storage class nobody provisions, a
// LoadBalancer Service without a load balancer controller) is not, with
// its message.
func TestDefaultRulesOnLiveObjects(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	startNode(t, ns)
	mustKubectl(t, "", strings.ReplaceAll(liveWorkloads, "NODE", ns), "apply", "-n", ns, "-f", "-")

	want := map[string]string{
		"Deployment.apps/web": "Healthy", "StatefulSet.apps/db": "Healthy", "DaemonSet.apps/agent": "Healthy",
		"Job.batch/migrate": "Healthy", "PersistentVolumeClaim/data": "Progressing", "Service/public": "Progressing",
	}
	var last string
	eventually(t, "the workloads settle", func(ctx context.Context) error {
		live := mustKubectl(t, "", "", "get", "deployments,statefulsets,daemonsets,jobs,pods,persistentvolumeclaims,services", "-n", ns, "-o", "yaml")
		out := kubectlConvoyStdin(t, live, "rules", "test", "-f", "-", "-o", "json")
		last = out.String()
		if out.code != 1 {
			return fmt.Errorf("exit %d: %s", out.code, out.stderr)
		}
		var got struct{ Results []map[string]string }
		if err := json.Unmarshal([]byte(out.stdout), &got); err != nil {
			return err
		}
		seen := map[string]string{}
		for _, r := range got.Results {
			gv, _ := schema.ParseGroupVersion(r["apiVersion"])
			key := r["kind"]
			if gv.Group != "" {
				key += "." + gv.Group
			}
			key += "/" + r["name"]
			seen[key] = r["state"]
			if r["kind"] == "Pod" && r["state"] != "Healthy" {
				return fmt.Errorf("pod %s is %s: %s", r["name"], r["state"], r["message"])
			}
		}
		for k, state := range want {
			if seen[k] != state {
				return fmt.Errorf("%s is %q, want %s (%s)", k, seen[k], state, out.stdout)
			}
		}
		return nil
	})
	assert.Contains(t, last, "PVC is Pending")
	assert.Contains(t, last, "waiting for the load balancer to get an external address")
	dumpObjects(t, ns, "deployments", "statefulsets", "daemonsets", "jobs", "pods")
}
