//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// setInventory replaces spec.entries of the Release's inventory, as the
// controller records a rollout wave by wave.
func (s *controllerStandIn) setInventory(namespace, name string, entries ...convoyv1alpha1.InventoryEntry) {
	s.t.Helper()
	require.NoError(s.t, s.applier.SetInventory(context.Background(), s.release(namespace, name), entries))
}

// syncNotes lists the notes of the sync requests recorded in namespace.
func syncNotes(t *testing.T, namespace string) []string {
	t.Helper()
	events, err := kubeClient(t).EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, e := range events.Items {
		if e.Reason == "SyncRequested" {
			out = append(out, e.Note)
		}
	}
	return out
}

func waitSyncNote(t *testing.T, namespace, note string) {
	t.Helper()
	eventually(t, "a sync request: "+note, func(context.Context) error {
		for _, n := range syncNotes(t, namespace) {
			if strings.Contains(n, note) {
				return nil
			}
		}
		return fmt.Errorf("sync requests: %q", syncNotes(t, namespace))
	})
}

// "The observer sends a /sync request when the highest applied sync wave
// becomes fully healthy": during a rollout of render B held at wave 0, wave
// 1 still at render A and healthy, wave 0 of render B becoming healthy wakes
// the controller. The applied waves are those of the current render.
func TestHealthWakesTheControllerAtAHeldWave(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	standIn := newStandIn(t)
	a := standIn.apply(ns, "web")
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")

	// Render B: wave 0 (the Deployment) applied, wave 1 (the ConfigMap)
	// held at render A.
	const renderB = "bbbbbbbbbbbbbbbb"
	standIn.updateStatus(ns, "web", func(st *convoyv1alpha1.ReleaseStatus) {
		st.LastAttempted = &convoyv1alpha1.RenderRecord{RenderRef: renderB, Time: metav1.Now()}
	})
	standIn.setInventory(ns, "web",
		convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"},
			Version: "v1", Wave: 0, RenderRef: renderB},
		convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: ns, Name: "settings"},
			Version: "v1", Wave: 1, RenderRef: a.Ref})
	waitHealthy(t, ns, "web", metav1.ConditionUnknown, "Pending")
	waitSyncNote(t, ns, "render "+renderB+" assessed for the first time")
	require.NotContains(t, strings.Join(syncNotes(t, ns), "\n"), "wave 0 is healthy")

	makeDeploymentAvailable(t, ns, "web")
	waitSyncNote(t, ns, "wave 0 is healthy")
	waitHealthy(t, ns, "web", metav1.ConditionUnknown, "Pending")
}

// "A rule that does not return a bool is also an evaluation error": the
// resource is Unknown, the Release is assessed (not Cannot assess).
func TestHealthRuleThatDoesNotReturnABool(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	mustKubectl(t, "", `apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata: {name: counts, namespace: `+ns+`}
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "size(object.data)"
`, "apply", "-f", "-")
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), func(r *convoyv1alpha1.Release) {
		r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{}}
	})
	newStandIn(t).apply(ns, "web")
	r := waitHealthy(t, ns, "web", metav1.ConditionUnknown, "Unknown")
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Unknown: 1}, r.Status.HealthSummary)
	settings := entryStatus(t, ns, "web", "ConfigMap", "settings")
	assert.Equal(t, convoyv1alpha1.HealthUnknown, settings.State)
	assert.Contains(t, settings.Message, "rule 0 of HealthRuleSet "+ns+"/counts returned int 1, not a bool")
	assert.Equal(t, convoyv1alpha1.HealthHealthy, entryStatus(t, ns, "web", "Deployment", "web").State, "no rule applies to it")
}

// convoy's Health assessment page said "The suspended field is never set"; since the
// Suspended state it is set only while a resource is Suspended
// (TestHealthSuspendedPausedDeployment), never to 0.
func TestHealthSummarySuspendedOnlyWhenSuspended(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "assessed", webManifests("blue", "1.0"), assessed(0))
	newDriftRelease(t, ns, "plain", webManifests("green", "1.0"))
	standIn := newStandIn(t)
	standIn.apply(ns, "assessed")
	standIn.apply(ns, "plain")
	waitHealthy(t, ns, "assessed", metav1.ConditionFalse, "Progressing")
	waitHealthy(t, ns, "plain", metav1.ConditionTrue, "NotConfigured")
	for _, name := range []string{"assessed", "plain"} {
		var release struct {
			Status struct {
				HealthSummary map[string]any `json:"healthSummary"`
			} `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(mustKubectl(t, "", "", "get", "release", name, "-n", ns, "-o", "json")), &release))
		require.NotNil(t, release.Status.HealthSummary, name)
		assert.Contains(t, release.Status.HealthSummary, "total", name)
		assert.NotContains(t, release.Status.HealthSummary, "suspended", name)
	}
}

// "No rule applies. The resource is Healthy. The observer does not read it
// from the cluster." Even of a kind the cluster does not serve.
func TestHealthNoRuleAppliesToAKindTheClusterDoesNotServe(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	standIn := newStandIn(t)
	a := standIn.apply(ns, "web")
	makeDeploymentAvailable(t, ns, "web")
	standIn.setInventory(ns, "web",
		convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"},
			Version: "v1", RenderRef: a.Ref},
		convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Group: "e2e.convoy.test", Kind: "Gizmo", Namespace: ns, Name: "g"},
			Version: "v1", RenderRef: a.Ref})
	r := waitHealthy(t, ns, "web", metav1.ConditionTrue, "Healthy")
	assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2}, r.Status.HealthSummary)
	gizmo := entryStatus(t, ns, "web", "Gizmo", "g")
	assert.Equal(t, convoyv1alpha1.HealthHealthy, gizmo.State)
	assert.Equal(t, "no health rule applies", gizmo.Message)
}
