package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// ownersOf returns the owners of the change at path of the Deployment web.
func ownersOf(t *testing.T, d subresourcesv1alpha1.ReleaseDiff, path string) subresourcesv1alpha1.FieldChange {
	t.Helper()
	for _, c := range objectDiff(t, d, "Deployment", "web").Changes {
		if c.Path == path {
			return c
		}
	}
	require.Failf(t, "no change", "no change at %s in %+v", path, d)
	return subresourcesv1alpha1.FieldChange{}
}

// Each change of a drifted object names who made it, from the live
// object's managedFields, as the real kube-apiserver records it: kubectl
// scale through /scale (no time), kubectl patch --field-manager (its time),
// an update of another manager (a label it changed); the InSync message, the
// plugin's diff and its CHANGED-BY column name them.
func TestDriftExplained(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=5")
	patched := time.Now()
	mustKubectl(t, "", "", "patch", "deployment", "web", "-n", ns, "--field-manager=intruder", "--type=strategic",
		"-p", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/web:6.6"}]}}}}`)
	deployments := kubeClient(t).AppsV1().Deployments(ns)
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	d.Labels["app"] = "edited"
	_, err = deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)
	for _, m := range d.ManagedFields {
		t.Logf("managedFields: manager %q operation %s subresource %q time %v", m.Manager, m.Operation, m.Subresource, m.Time)
	}

	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	diff := getDiff(t, ns, "web", "")
	replicas := ownersOf(t, diff, "spec.replicas")
	require.Len(t, replicas.Owners, 1, "%+v", replicas)
	t.Logf("kubectl scale is recorded as %+v", replicas.Owners[0])
	assert.Equal(t, "kubectl", replicas.Owners[0].Manager)
	assert.Equal(t, "scale", replicas.Owners[0].Subresource)
	assert.Equal(t, "Update", replicas.Owners[0].Operation)

	image := ownersOf(t, diff, "spec.template.spec.containers[name=app].image")
	require.Len(t, image.Owners, 1, "%+v", image)
	assert.Equal(t, "intruder", image.Owners[0].Manager)
	require.NotNil(t, image.Owners[0].Time)
	assert.WithinDuration(t, patched, image.Owners[0].Time.Time, 10*time.Second, "the time of the patch, to the second")

	// A label added by another manager is not drift (the dry run of
	// server-side apply keeps it); one convoy set, updated, is.
	label := ownersOf(t, diff, `metadata.labels.app`)
	require.Len(t, label.Owners, 1, "%+v", label)
	assert.Equal(t, "kubectl-edit", label.Owners[0].Manager)
	assert.Equal(t, "Update", label.Owners[0].Operation)

	web := objectDiff(t, diff, "Deployment", "web")
	assert.ElementsMatch(t, []string{"kubectl (scale)", "intruder", "kubectl-edit"}, web.ChangedBy, "both managers and the editor")
	assert.Contains(t, cond.Message, "changed by ")
	for _, who := range []string{"kubectl (scale) at an unknown time", "intruder at ", "kubectl-edit at "} {
		assert.Contains(t, cond.Message, who)
	}

	eventually(t, "a Drifted Event that names who changed the fields", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Drifted" && strings.Contains(e.Note, "changed by ") && strings.Contains(e.Note, "kubectl (scale)") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})

	r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns)
	require.Equal(t, 1, r.code, r)
	t.Logf("kubectl convoy release diff web -n %s\n%s", ns, r.stdout)
	assert.Contains(t, r.stdout, "@@ spec.replicas @@ changed by kubectl (scale), time unknown\n")
	assert.Regexp(t, `@@ spec\.template\.spec\.containers\[name=app\]\.image @@ changed by intruder \d+s ago\n`, r.stdout)
	r = kubectlConvoy(t, "", "release", "get", "web", "-n", ns)
	require.Zero(t, r.code, r)
	assert.Regexp(t, fmt.Sprintf(`(?m)^Deployment\.apps\s+%s\s+web\s+Modified\s+\S+\s+kubectl-edit, kubectl \(scale\), intruder\s+changed: `, ns), r.stdout)

	// A Missing object cannot be attributed: it has no changes.
	require.NoError(t, deployments.Delete(ctx, "web", metav1.DeleteOptions{}))
	eventually(t, "web Missing", func(context.Context) error {
		if o := objectDiff(t, getDiff(t, ns, "web", ""), "Deployment", "web"); o.Status != subresourcesv1alpha1.ObjectMissing || len(o.ChangedBy) != 0 {
			return fmt.Errorf("%+v", o)
		}
		return nil
	})
}
