//go:build unix

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// pastTheLists waits until the LISTs a pass could share are older than the
// freshness window: the next pass sees the cluster as it is now.
func pastTheLists() { time.Sleep(cluster.DefaultListFreshness + time.Second) }

// touch changes the spec of a Release harmlessly: a drift pass, nothing
// else.
func touch(t *testing.T, namespace, name, interval string) {
	t.Helper()
	mustKubectl(t, "", "", "patch", "release", name, "-n", namespace, "--type=merge", "-p", `{"spec":{"syncPolicy":{"interval":"`+interval+`"}}}`)
}

// With the caches on (the e2e server's default): an object another manager
// changed between two passes is found at the next pass, and a Release whose
// source changed is rendered again.
func TestCacheFindsWhatChanged(t *testing.T) {
	// Not parallel: its quiet window, pass count and pastTheLists are timed
	// for an idle server.
	ns := newNamespace(t)
	standIn := newStandIn(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), hourly)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// A pass over nothing changed: the compares are reused, the answer holds.
	passes := countPasses(t, driftPass, ns, "web")
	touch(t, ns, "web", "59m")
	staysInSync(t, ns, "web", metav1.ConditionTrue, "InSync", "nothing changed")
	passes.requireAtLeast(t, 1)

	mustKubectl(t, "", "", "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", `{"data":{"color":"red"}}`)
	pastTheLists()
	touch(t, ns, "web", "58m")
	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "ConfigMap "+ns+"/settings is Modified: data.color")

	// The source changes to what the cluster holds: rendered again, in sync.
	setManifests(t, ns, "web", webManifests("red", "1.0"))
	pastTheLists()
	touch(t, ns, "web", "57m")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
}

// The loop (shared LISTs, reused renders and compares) and GET /diff (every
// object read) give the same answers.
func TestCacheAgreesWithTheDiff(t *testing.T) {
	// Not parallel: pastTheLists is timed for the LIST freshness of an idle
	// server.
	ns := newNamespace(t)
	standIn := newStandIn(t)
	for _, name := range []string{"same", "scaled", "missing"} {
		newDriftRelease(t, ns, name, map[string]string{"deployment.yaml": deploymentNamed(name)}, hourly)
		standIn.apply(ns, name)
	}
	mustKubectl(t, "", "", "scale", "deployment", "scaled", "-n", ns, "--replicas=4")
	mustKubectl(t, "", "", "delete", "deployment", "missing", "-n", ns)
	pastTheLists()
	for _, name := range []string{"same", "scaled", "missing"} {
		touch(t, ns, name, "59m")
	}
	want := map[string]string{"same": "InSync", "scaled": "Drifted", "missing": "Drifted"}
	for name, reason := range want {
		status := metav1.ConditionTrue
		if reason == "Drifted" {
			status = metav1.ConditionFalse
		}
		waitInSync(t, ns, name, status, reason)
		assert.Equal(t, reason, string(getDiff(t, ns, name, "").Result), "/diff of %s", name)
	}
}

func deploymentNamed(name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers: [{name: app, image: registry.example/app:1}]
`
}

// A pass that follows a sync uses only a LIST sent after it, however fresh
// an older one is (cluster.WithListedAfter); a pass that follows a new spec
// shares a fresh LIST, as one at its interval does. With LISTs shared for 10
// minutes: the pass that a sync starts sees what the sync applied; the pass
// that a spec change starts does not see a change another manager made after
// the LIST it shares (GET /diff, which reads every object, does). Without
// the first rule (checked by taking it out) the first check fails: a pass
// that ran while the stand-in was applying saw a Deployment Modified, the
// pass after the sync shared that pass's LIST and reused the compare, and the
// Release stayed Drifted. With a LIST after a spec change too, the second
// check fails.
func TestWhichPassesListAgain(t *testing.T) {
	// Not parallel: it replaces convoy-apiserver with one of other flags.
	replaceConvoy(t, "--list-freshness=10m")
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), hourly)
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// A pass with compares to reuse: it LISTs, and that LIST stays fresh.
	touch(t, ns, "web", "59m")
	waitObserved(t, ns, "web")
	mustKubectl(t, "", "", "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", `{"data":{"color":"red"}}`)
	touch(t, ns, "web", "58m")
	waitObserved(t, ns, "web")
	c := inSyncOf(t, ns, "web")
	assert.Equal(t, "InSync", c.Reason, "a pass after a spec change shares the LIST of 10 minutes: %s", c.Message)
	assert.Equal(t, "Drifted", string(getDiff(t, ns, "web", "").Result), "/diff reads every object")
}

// waitObserved waits until the InSync condition of the Release is of its
// current generation: a pass of its last spec ran.
func waitObserved(t *testing.T, namespace, name string) {
	t.Helper()
	eventually(t, fmt.Sprintf("InSync of the generation of %s/%s", namespace, name), func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		if c == nil || c.ObservedGeneration != r.Generation {
			return fmt.Errorf("InSync %v, generation %d", c, r.Generation)
		}
		return nil
	})
}

// replaceConvoy stops the registered convoy-apiserver and starts one with
// args added to the e2e ones for the test; after it, one with the e2e args
// again.
func replaceConvoy(t *testing.T, args ...string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.cp.ConvoyAPIServer().Stop())
	p, err := env.cp.StartConvoyAPIServer(ctx, args...)
	require.NoError(t, err)
	require.NoError(t, env.cp.RegisterAPIService(ctx, p))
	t.Cleanup(func() {
		require.NoError(t, p.Stop())
		next, err := env.cp.StartConvoyAPIServer(ctx)
		require.NoError(t, err)
		require.NoError(t, env.cp.RegisterAPIService(ctx, next))
	})
}
