//go:build unix

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	ns := newNamespace(t)
	standIn := newStandIn(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), hourly)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// A pass over nothing changed: the compares are reused, the answer holds.
	touch(t, ns, "web", "59m")
	staysInSync(t, ns, "web", metav1.ConditionTrue, "InSync", "nothing changed")

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
