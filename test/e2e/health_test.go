//go:build unix

package e2e

import (
	"context"
	"encoding/json"
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
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// assessed selects the default rule sets, with a deadline.
func assessed(deadline time.Duration) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{
			GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{convoyv1alpha1.LabelDefaultRuleSet: "true"}},
		}
		if deadline > 0 {
			r.Spec.HealthAssessment.Deadline = &metav1.Duration{Duration: deadline}
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// waitHealthy waits until the Healthy condition has status and reason.
func waitHealthy(t *testing.T, namespace, name string, status metav1.ConditionStatus, reason string) *convoyv1alpha1.Release {
	t.Helper()
	var got *convoyv1alpha1.Release
	eventually(t, fmt.Sprintf("Healthy %s/%s of %s/%s", status, reason, namespace, name), func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
		if c == nil {
			return fmt.Errorf("no Healthy condition yet")
		}
		if c.Status != status || c.Reason != reason {
			return fmt.Errorf("Healthy is %s/%s: %s", c.Status, c.Reason, c.Message)
		}
		got = r
		return nil
	})
	return got
}

// entryStatus reads the status entry of kind/name from the inventory.
func entryStatus(t *testing.T, namespace, release, kind, name string) convoyv1alpha1.InventoryEntryStatus {
	t.Helper()
	e, err := findEntryStatus(t, namespace, release, kind, name)
	require.NoError(t, err)
	return e
}

// findEntryStatus is entryStatus for polling: it returns an error instead of
// failing the test.
func findEntryStatus(t *testing.T, namespace, release, kind, name string) (convoyv1alpha1.InventoryEntryStatus, error) {
	inv, err := convoyClient(t).ConvoyV1alpha1().ReleaseInventories(namespace).Get(context.Background(), release, metav1.GetOptions{})
	if err != nil {
		return convoyv1alpha1.InventoryEntryStatus{}, err
	}
	for _, e := range inv.Status.Entries {
		if e.Kind == kind && e.Name == name {
			return e, nil
		}
	}
	return convoyv1alpha1.InventoryEntryStatus{}, fmt.Errorf("no status entry for %s %s in %+v", kind, name, inv.Status.Entries)
}

// makeDeploymentAvailable gives the namespace a Node of its own, so that the
// Pods of the Deployment, Pending until now, are scheduled and made Ready by
// kwok, and waits until the Deployment controller reports the rollout done.
func makeDeploymentAvailable(t *testing.T, namespace, name string) {
	t.Helper()
	startNode(t, namespace)
	eventually(t, fmt.Sprintf("Deployment %s/%s available", namespace, name), func(ctx context.Context) error {
		d, err := kubeClient(t).AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.UpdatedReplicas != *d.Spec.Replicas {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})
}

func healthPath(namespace, name string) string {
	return fmt.Sprintf("%s/namespaces/%s/releases/%s/health", subresourcesAPI, namespace, name)
}

func TestHealthProgressingDegradedHealthyAcrossRestart(t *testing.T) {
	// Not parallel: it restarts convoy-apiserver.
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(8*time.Second))
	newStandIn(t).apply(ns, "web")

	// No Node for the namespace yet: the Deployment does not become available.
	r := waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")
	assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy).Message, "Deployment")
	web := entryStatus(t, ns, "web", "Deployment", "web")
	assert.Equal(t, convoyv1alpha1.HealthProgressing, web.State)
	require.NotNil(t, web.FirstUnhealthy)
	first := web.FirstUnhealthy.Time
	assert.Equal(t, convoyv1alpha1.HealthHealthy, entryStatus(t, ns, "web", "ConfigMap", "settings").State, "no rule applies to a ConfigMap")

	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Degraded")
	web = entryStatus(t, ns, "web", "Deployment", "web")
	assert.Equal(t, convoyv1alpha1.HealthDegraded, web.State)
	assert.True(t, first.Equal(web.FirstUnhealthy.Time), "firstUnhealthy is kept")

	// A restart of convoy-apiserver keeps firstUnhealthy and the verdict:
	// they are in the ReleaseInventory.
	old := env.cp.ConvoyAPIServer()
	require.NoError(t, old.Stop())
	next, err := env.cp.StartConvoyAPIServer(context.Background())
	require.NoError(t, err)
	require.NoError(t, env.cp.RegisterAPIService(context.Background(), next))
	require.Equal(t, next, env.cp.ConvoyAPIServer())
	// A pass of the new process, counted from now: one may have run before.
	countPasses(t, healthPass, ns, "web").waitFor(t, 1)
	web = entryStatus(t, ns, "web", "Deployment", "web")
	assert.Equal(t, convoyv1alpha1.HealthDegraded, web.State)
	assert.True(t, first.Equal(web.FirstUnhealthy.Time), "firstUnhealthy survives the restart")
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Degraded")

	makeDeploymentAvailable(t, ns, "web")
	r = waitHealthy(t, ns, "web", metav1.ConditionTrue, "Healthy")
	web = entryStatus(t, ns, "web", "Deployment", "web")
	assert.Equal(t, convoyv1alpha1.HealthHealthy, web.State)
	assert.Nil(t, web.FirstUnhealthy, "passing clears firstUnhealthy")
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2}, r.Status.HealthSummary)
}

func TestHealthConditionSituations(t *testing.T) {
	t.Parallel()
	t.Run("NotConfigured", func(t *testing.T) {
		ns := newNamespace(t)
		newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
		newStandIn(t).apply(ns, "web")
		r := waitHealthy(t, ns, "web", metav1.ConditionTrue, "NotConfigured")
		assert.Equal(t, &convoyv1alpha1.HealthSummary{}, r.Status.HealthSummary, "all counts 0")
	})
	t.Run("Pending", func(t *testing.T) {
		ns := newNamespace(t)
		newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
		standIn := newStandIn(t)
		standIn.apply(ns, "web")
		makeDeploymentAvailable(t, ns, "web")
		waitHealthy(t, ns, "web", metav1.ConditionTrue, "Healthy")
		// The controller attempts a new render, not applied yet.
		standIn.updateStatus(ns, "web", func(st *convoyv1alpha1.ReleaseStatus) {
			st.LastAttempted = &convoyv1alpha1.RenderRecord{RenderRef: "00000000deadbeef", Time: metav1.Now()}
		})
		r := waitHealthy(t, ns, "web", metav1.ConditionUnknown, "Pending")
		assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy).Message, "00000000deadbeef")
	})
	t.Run("CannotAssess keeps the summary", func(t *testing.T) {
		ns := newNamespace(t)
		newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
		newStandIn(t).apply(ns, "web")
		before := waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing").Status.HealthSummary
		require.Equal(t, &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Progressing: 1}, before)

		mustKubectl(t, "", `apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata: {name: broken, namespace: `+ns+`, labels: {team: x}}
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "object.data.color ==="
`, "apply", "-f", "-")
		mustKubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"healthAssessment":{"localRuleSetSelector":{"matchLabels":{"team":"x"}}}}}`)
		r := waitHealthy(t, ns, "web", metav1.ConditionUnknown, "CannotAssess")
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
		assert.Contains(t, c.Message, "broken")
		assert.Equal(t, before, r.Status.HealthSummary, "healthSummary keeps its last value")

		// An invalid selector: a label key that is not one.
		mustKubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"healthAssessment":{"localRuleSetSelector":{"matchLabels":{"team":null,"not a key!":"x"}}}}}`)
		eventually(t, "CannotAssess naming the selector", func(ctx context.Context) error {
			r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
			if c == nil || c.Reason != "CannotAssess" || !strings.Contains(c.Message, "not a key!") {
				return fmt.Errorf("Healthy: %+v", c)
			}
			return nil
		})
	})
	t.Run("CannotAssess when the cluster is unreachable", func(t *testing.T) {
		ns := newNamespace(t)
		newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
		newStandIn(t).apply(ns, "web")
		before := waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing").Status.HealthSummary
		gone := strings.Replace(string(readFile(t, env.cp.AdminKubeconfig())), env.cp.AdminConfig().Host,
			fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), 1)
		registerCluster(t, ns, "gone", []byte(gone))
		mustKubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"cluster":{"name":"gone"}}}`)
		r := waitHealthy(t, ns, "web", metav1.ConditionUnknown, "CannotAssess")
		assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy).Message, "connection refused")
		assert.Equal(t, before, r.Status.HealthSummary, "healthSummary keeps its last value")
	})
	t.Run("Unknown when an object is gone", func(t *testing.T) {
		ns := newNamespace(t)
		newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
		newStandIn(t).apply(ns, "web")
		waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")
		mustKubectl(t, "", "", "delete", "deployment", "web", "-n", ns)
		r := waitHealthy(t, ns, "web", metav1.ConditionUnknown, "Unknown")
		assert.Equal(t, int32(1), r.Status.HealthSummary.Unknown)
		web := entryStatus(t, ns, "web", "Deployment", "web")
		assert.Contains(t, web.Message, "not on the cluster")
		assert.NotNil(t, web.FirstUnhealthy, "Unknown keeps firstUnhealthy")
	})
}

func TestHealthAssessedRenderRefAndSyncRequests(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	standIn := newStandIn(t)
	first := standIn.apply(ns, "web")
	requested := func() string {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		return r.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]
	}
	notes := func() []string { return syncNotes(t, ns) }

	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")
	assert.Equal(t, first.Ref, entryStatus(t, ns, "web", "Deployment", "web").AssessedRenderRef)
	eventually(t, "a sync request for the first assessment", func(context.Context) error {
		for _, n := range notes() {
			if strings.Contains(n, "render "+first.Ref+" assessed for the first time") {
				return nil
			}
		}
		return fmt.Errorf("events: %v", notes())
	})
	settled := requested()
	passes := countPasses(t, healthPass, ns, "web")
	passes.waitAtLeast(t, 2, 3*2*time.Second) // every passInterval, a pass taking up to a second
	assert.Equal(t, settled, requested(), "no sync request while nothing changes")

	makeDeploymentAvailable(t, ns, "web")
	waitHealthy(t, ns, "web", metav1.ConditionTrue, "Healthy")
	eventually(t, "a sync request when the highest wave is healthy", func(context.Context) error {
		for _, n := range notes() {
			if strings.Contains(n, "wave 0 is healthy") {
				return nil
			}
		}
		return fmt.Errorf("events: %v", notes())
	})

	// A new render: assessedRenderRef follows renderRef, and the new render's
	// first assessment asks for a sync.
	setManifests(t, ns, "web", webManifests("green", "1.0"))
	second := standIn.apply(ns, "web")
	eventually(t, "assessedRenderRef follows renderRef", func(context.Context) error {
		e, err := findEntryStatus(t, ns, "web", "ConfigMap", "settings")
		if err == nil && e.AssessedRenderRef != second.Ref {
			err = fmt.Errorf("assessedRenderRef %s", e.AssessedRenderRef)
		}
		return err
	})
	eventually(t, "a sync request for the new render", func(context.Context) error {
		for _, n := range notes() {
			if strings.Contains(n, "render "+second.Ref+" assessed for the first time") {
				return nil
			}
		}
		return fmt.Errorf("events: %v", notes())
	})
}

func TestHealthHookCompletion(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	files := webManifests("blue", "1.0")
	files["job.yaml"] = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: registry.example/migrate:1}]
`
	newDriftRelease(t, ns, "web", files) // no healthAssessment: hooks are polled anyway
	standIn := newStandIn(t)
	standIn.apply(ns, "web")
	standIn.markHook(ns, "web", "batch", "Job", "migrate", convoyv1alpha1.HookPostSync)

	eventually(t, "the hook is Running", func(context.Context) error {
		e, err := findEntryStatus(t, ns, "web", "Job", "migrate")
		if err == nil && e.HookPhase != convoyv1alpha1.HookRunning {
			err = fmt.Errorf("hook phase %q", e.HookPhase)
		}
		return err
	})
	waitHealthy(t, ns, "web", metav1.ConditionTrue, "NotConfigured")

	// A Node for the namespace: kwok runs the Job's Pod to success, and the
	// Job controller marks the Job Complete.
	startNode(t, ns)
	eventually(t, "the hook Succeeded and a sync is requested", func(ctx context.Context) error {
		e, err := findEntryStatus(t, ns, "web", "Job", "migrate")
		if err == nil && e.HookPhase != convoyv1alpha1.HookSucceeded {
			err = fmt.Errorf("hook phase %q", e.HookPhase)
		}
		if err != nil {
			return err
		}
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "SyncRequested" && strings.Contains(e.Note, "hook Job.batch "+ns+"/migrate succeeded") {
				return nil
			}
		}
		return fmt.Errorf("no sync request for the hook")
	})
}

func TestHealthSubresource(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	applied := newStandIn(t).apply(ns, "web")
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")

	out := mustKubectl(t, "", "", "get", "--raw", healthPath(ns, "web"))
	var h subresourcesv1alpha1.ReleaseHealth
	require.NoError(t, json.Unmarshal([]byte(out), &h))
	require.NotNil(t, h.Healthy)
	assert.Equal(t, "Progressing", h.Healthy.Reason)
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Progressing: 1}, h.HealthSummary)
	require.Len(t, h.Entries, 2)
	inv, err := convoyClient(t).ConvoyV1alpha1().ReleaseInventories(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	for _, row := range h.Entries {
		assert.Equal(t, applied.Ref, row.RenderRef)
		var found bool
		for _, s := range inv.Status.Entries {
			if s.ObjectKey == row.ObjectKey {
				found = true
				assert.Equal(t, s.State, row.State)
				assert.Equal(t, s.Message, row.Message)
				assert.Equal(t, s.AssessedRenderRef, row.AssessedRenderRef)
			}
		}
		assert.True(t, found, "%+v", row.ObjectKey)
	}

	grant(t, ns, "judy", subresourceRule("health", "get"))
	grant(t, ns, "kim", subresourceRule("diff", "get"), rbacPolicy("convoy.kumodo.io", "releaseinventories", "get"))
	r := kubectl(t, user(t, "judy"), "", "get", "--raw", healthPath(ns, "web"))
	require.NoError(t, r.err, r.stderr)
	r = kubectl(t, user(t, "kim"), "", "get", "--raw", healthPath(ns, "web"))
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "Forbidden")
}
