//go:build unix

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// The tests of this file give their Releases an interval of an hour, and
// the e2e convoy-apiserver runs with --resync=1h, so that no periodic pass
// can hide a trigger that is missing or one that should not be there.
const longInterval = time.Hour

// quietWindow is how long a test watches for a pass that must not come: many
// times the time a pass takes here.
const quietWindow = 5 * time.Second

func hourly(r *convoyv1alpha1.Release) {
	r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: longInterval}
}

// inSyncOf reads the InSync condition of a Release; nil when it has none.
func inSyncOf(t *testing.T, namespace, name string) *metav1.Condition {
	t.Helper()
	r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
}

// staysInSync checks that the InSync condition keeps status and reason for
// quietWindow: no pass ran that would have changed it.
func staysInSync(t *testing.T, namespace, name string, status metav1.ConditionStatus, reason, why string) {
	t.Helper()
	deadline := time.Now().Add(quietWindow)
	for time.Now().Before(deadline) {
		c := inSyncOf(t, namespace, name)
		require.NotNil(t, c)
		require.Equal(t, status, c.Status, "%s: InSync changed: %s", why, c.Message)
		require.Equal(t, reason, c.Reason, "%s: InSync changed: %s", why, c.Message)
		time.Sleep(250 * time.Millisecond)
	}
}

// applyBehindTheObserversBack applies the Release's fresh render to the
// cluster as the controller would, but records nothing: no inventory, no
// status. Only a drift pass can notice it.
func applyBehindTheObserversBack(t *testing.T, s *controllerStandIn, namespace, name string) {
	t.Helper()
	require.NoError(t, s.applier.ApplyObjects(context.Background(), s.release(namespace, name), s.render(namespace, name).Objects))
}

// The triggers of docs/users/drift.md: a create, a spec change and a change of the
// inventory's renderRefs start a pass; a /sync request and a change on the
// cluster do not.
func TestDriftPassTriggers(t *testing.T) {
	// Not parallel: its quiet windows and pastTheLists are timed for an idle
	// server.
	ns := newNamespace(t)
	standIn := newStandIn(t)

	// Created: a pass finds every object Missing.
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), hourly)
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")

	// The objects appear without an inventory change: no pass.
	applyBehindTheObserversBack(t, standIn, ns, "web")
	staysInSync(t, ns, "web", metav1.ConditionFalse, "Drifted", "a change on the cluster")

	// A sync request starts no pass.
	mustKubectl(t, "", "{}", "create", "--raw", syncPath(ns, "web"), "-f", "-")
	staysInSync(t, ns, "web", metav1.ConditionFalse, "Drifted", "a /sync request")

	// The controller records a render in the inventory: a pass.
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// Drift on the cluster is seen at the next pass only...
	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=5")
	staysInSync(t, ns, "web", metav1.ConditionTrue, "InSync", "a change on the cluster")
	// ... which a spec change starts; it shares a LIST of the last
	// --list-freshness, so the change must be older.
	pastTheLists()
	mustKubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"syncPolicy":{"interval":"59m"}}}`)
	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "spec.replicas")
}

// "The observer does not retry an Undetermined result with backoff. It
// checks again at the next interval."
func TestDriftUndeterminedIsNotRetried(t *testing.T) {
	// Not parallel: its quiet window is timed for an idle server.
	ns := newNamespace(t)
	r := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: convoyv1alpha1.ReleaseSpec{
			Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web-manifests"}},
		},
	}
	hourly(r)
	_, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Create(context.Background(), r, metav1.CreateOptions{})
	require.NoError(t, err)
	assertUndetermined(t, ns, "web", "RenderFailed", "SourceNotFound")

	// The source appears; nothing tells the observer, and it does not retry.
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	staysInSync(t, ns, "web", metav1.ConditionUnknown, "Undetermined", "an Undetermined result")

	mustKubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"syncPolicy":{"interval":"59m"}}}`)
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
}

// "The observer skips a Release that is being deleted."
func TestDriftSkipsAReleaseBeingDeleted(t *testing.T) {
	// Not parallel: its quiet window is timed for an idle server.
	ns := newNamespace(t)
	standIn := newStandIn(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), hourly, func(r *convoyv1alpha1.Release) {
		r.Finalizers = []string{"e2e.convoy.test/hold"}
	})
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	t.Cleanup(func() {
		kubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	})

	applyBehindTheObserversBack(t, standIn, ns, "web")
	mustKubectl(t, "", "", "delete", "release", "web", "-n", ns, "--wait=false")
	// A spec change and an inventory change would each start a pass.
	mustKubectl(t, "", "", "patch", "release", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"syncPolicy":{"interval":"59m"}}}`)
	standIn.apply(ns, "web")
	staysInSync(t, ns, "web", metav1.ConditionFalse, "Drifted", "a Release being deleted")
}

// The informer resync starts a drift pass of every Release (--resync).
func TestDriftResyncStartsAPass(t *testing.T) {
	// Not parallel: it starts a second replica.
	ns := newNamespace(t)
	standIn := newStandIn(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), hourly)
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	applyBehindTheObserversBack(t, standIn, ns, "web")
	staysInSync(t, ns, "web", metav1.ConditionFalse, "Drifted", "--resync=1h")

	// A second convoy-apiserver, without leader election, runs its own
	// loops with a short resync: its resync passes the Release.
	replica, err := env.cp.StartConvoyAPIServer(context.Background(), "--resync=3s", "--leader-elect=false")
	require.NoError(t, err)
	t.Cleanup(func() { _ = replica.Stop() })
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
}

// The observer's fields belong to the field manager convoy-observe: InSync,
// Healthy and healthSummary on the Release, status.entries on the
// inventory; the controller's fields stay the controller's.
func TestObserverFieldsAreOwnedByConvoyObserve(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")

	fieldsOf := func(entries []metav1.ManagedFieldsEntry, manager, subresource string) string {
		for _, e := range entries {
			if e.Manager == manager && e.Subresource == subresource && e.Operation == metav1.ManagedFieldsOperationApply {
				return string(e.FieldsV1.Raw)
			}
		}
		return ""
	}
	ctx := context.Background()
	var release *convoyv1alpha1.Release
	eventually(t, "the observer's status fields", func(ctx context.Context) error {
		var err error
		release, err = convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if f := fieldsOf(release.ManagedFields, convoyv1alpha1.FieldManagerObserver, "status"); !strings.Contains(f, `k:{\"type\":\"Healthy\"}`) {
			return fmt.Errorf("convoy-observe owns %s", f)
		}
		return nil
	})
	observed := fieldsOf(release.ManagedFields, convoyv1alpha1.FieldManagerObserver, "status")
	for _, field := range []string{`k:{\"type\":\"InSync\"}`, `k:{\"type\":\"Healthy\"}`, `"f:healthSummary"`} {
		assert.Contains(t, observed, field)
	}
	for _, field := range []string{"lastAttempted", "lastApplied"} {
		assert.NotContains(t, observed, field, "the controller's")
	}
	assert.Contains(t, fieldsOf(release.ManagedFields, convoyv1alpha1.FieldManagerController, "status"), `"f:lastApplied"`)

	inv, err := convoyClient(t).ConvoyV1alpha1().ReleaseInventories(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, fieldsOf(inv.ManagedFields, convoyv1alpha1.FieldManagerObserver, "status"), `"f:entries"`)
	assert.Empty(t, fieldsOf(inv.ManagedFields, convoyv1alpha1.FieldManagerObserver, ""), "the observer owns nothing of the spec")
	assert.Contains(t, fieldsOf(inv.ManagedFields, convoyv1alpha1.FieldManagerController, ""), `"f:entries"`)
}

// localRuleSetSelector selects HealthRuleSets of the Release's namespace
// only: {} in one namespace never selects a set of another.
func TestHealthRuleSetsOfAnotherNamespaceAreNeverSelected(t *testing.T) {
	t.Parallel()
	other := newNamespace(t)
	mustKubectl(t, "", `apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata: {name: everything-fails, namespace: `+other+`}
spec:
  rules:
  - apiVersion: v1
    resources: ["*"]
    expression: "false"
    message: a rule of another namespace
`, "apply", "-f", "-")

	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", map[string]string{"config.yaml": fmt.Sprintf(configMapManifest, "blue")}, func(r *convoyv1alpha1.Release) {
		r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{}}
	})
	newStandIn(t).apply(ns, "web")
	waitHealthy(t, ns, "web", metav1.ConditionTrue, "Healthy")
	// Healthy may come from a pass before the inventory had its entries.
	eventually(t, "the entry of settings says no rule applies", func(context.Context) error {
		e, err := findEntryStatus(t, ns, "web", "ConfigMap", "settings")
		if err == nil && e.Message != "no health rule applies" {
			err = fmt.Errorf("the entry of settings is %+v", e)
		}
		return err
	})

	// The same selector in the other namespace does select it.
	newDriftRelease(t, other, "web", map[string]string{"config.yaml": fmt.Sprintf(configMapManifest, "blue")}, func(r *convoyv1alpha1.Release) {
		r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{}}
	})
	newStandIn(t).apply(other, "web")
	waitHealthy(t, other, "web", metav1.ConditionFalse, "Progressing")
}

// The readyz check "observer" is part of /readyz on every replica: ok on the
// leader, whose loops run.
func TestReadyzObserverCheck(t *testing.T) {
	t.Parallel()
	p := env.cp.ConvoyAPIServer()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, body := replicaGet(t, p, "/readyz/observer")
		return code == 200 && strings.TrimSpace(body) == "ok", nil
	})
	require.NoError(t, err)
	_, body := replicaGet(t, p, "/readyz?verbose")
	assert.Contains(t, body, "[+]observer ok")
}
