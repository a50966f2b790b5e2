//go:build unix

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// An applied object that the render no longer declares is listed in
// extraObjects of /diff and by the plugin while it exists; InSync keeps
// counting only the declared objects.
func TestDiffExtraObjects(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	applied := newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	assert.Empty(t, getDiff(t, ns, "web", "").ExtraObjects)

	// The ConfigMap leaves the source; the controller has not synced yet.
	setManifests(t, ns, "web", map[string]string{"deployment.yaml": fmt.Sprintf(deploymentManifest, "1.0")})
	var d subresourcesv1alpha1.ReleaseDiff
	eventually(t, "the ConfigMap listed as extra", func(context.Context) error {
		d = getDiff(t, ns, "web", "")
		if len(d.ExtraObjects) != 1 {
			return fmt.Errorf("extraObjects: %+v (render %s)", d.ExtraObjects, d.RenderRef)
		}
		return nil
	})
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result, "extra objects do not change the result")
	require.Len(t, d.Objects, 1)
	extra := d.ExtraObjects[0]
	assert.Equal(t, []string{"", "v1", "ConfigMap", ns, "settings", applied.Ref, ""},
		[]string{extra.Group, extra.Version, extra.Kind, extra.Namespace, extra.Name, extra.RenderRef, extra.Message})
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns)
	assert.Equal(t, 0, r.code, r)
	assert.Regexp(t, `(?m)^Extra\s+ConfigMap\s+`+ns+`/settings\s+\(not in the render: the next sync prunes it\)$`, r.stdout)

	// Pruned (here by hand): no longer listed, although still in the inventory.
	require.NoError(t, kubeClient(t).CoreV1().ConfigMaps(ns).Delete(context.Background(), "settings", metav1.DeleteOptions{}))
	assert.Empty(t, getDiff(t, ns, "web", "").ExtraObjects)
}
