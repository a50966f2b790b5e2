//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// assertUndetermined waits for InSync Unknown/Undetermined naming reason, and
// checks that /diff says the same.
func assertUndetermined(t *testing.T, namespace, name, reason string, inMessage ...string) {
	t.Helper()
	cond := waitInSync(t, namespace, name, metav1.ConditionUnknown, "Undetermined")
	assert.Contains(t, cond.Message, reason+": ")
	d := getDiff(t, namespace, name, "")
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, d.Result)
	assert.Equal(t, reason, d.Reason)
	for _, m := range inMessage {
		assert.Contains(t, cond.Message, m)
		assert.Contains(t, d.Message, m)
	}
}

// assertSourceUndetermined is assertUndetermined for a failure of a source
// or the render whose reason is reason: by the class it is declared with
// (pkg/failure), one that is not valid input or not found stands behind
// RenderFailed, its reason first in the message; any other (a limit, a
// refusal, something unavailable) is the result's reason itself.
func assertSourceUndetermined(t *testing.T, namespace, name, reason string, inMessage ...string) {
	t.Helper()
	switch class := failure.ClassOf(reason); {
	case reason != drift.ReasonRenderFailed && (class == failure.ClassInvalid || class == failure.ClassNotFound):
		assertUndetermined(t, namespace, name, drift.ReasonRenderFailed, append([]string{reason + ": "}, inMessage...)...)
	default:
		assertUndetermined(t, namespace, name, reason, inMessage...)
	}
}

func TestDriftUnknownKind(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	files := webManifests("blue", "1.0")
	files["widget.yaml"] = "apiVersion: e2e.convoy.test/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n"
	newDriftRelease(t, ns, "web", files)
	assertUndetermined(t, ns, "web", "NoKindMatch", "Widget")
}

func TestDriftDryRunRejected(t *testing.T) {
	t.Parallel() // its policy binds to this test's namespace alone
	ns := newNamespace(t)
	mustKubectl(t, "", "", "label", "namespace", ns, "e2e-policy="+ns)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	policy := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || !('color' in object.data) || object.data.color != 'blue'"
    message: "blue is not allowed here"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {e2e-policy: %[1]s}
`, ns)
	mustKubectl(t, "", policy, "apply", "-f", "-")
	t.Cleanup(func() {
		kubectl(t, "", "", "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", ns)
	})
	assertUndetermined(t, ns, "web", "DryRunRejected", "ConfigMap "+ns+"/settings", "blue is not allowed here")

	// The server keeps serving: another Release is checked as before.
	ns2 := newNamespace(t)
	newDriftRelease(t, ns2, "web", webManifests("blue", "1.0"))
	newStandIn(t).apply(ns2, "web")
	waitInSync(t, ns2, "web", metav1.ConditionTrue, "InSync")
}

func TestDriftMissingCluster(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), onCluster("nowhere"))
	assertUndetermined(t, ns, "web", "ClusterNotFound", "nowhere")
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// registerCluster creates a Cluster name whose kubeconfig Secret holds kubeconfig.
func registerCluster(t *testing.T, namespace, name string, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	_, err := kubeClient(t).CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig"},
		Data:       map[string][]byte{"value": kubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = convoyClient(t).ConvoyV1alpha1().Clusters(namespace).Create(ctx, &convoyv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: convoyv1alpha1.ClusterSpec{KubeConfig: convoyv1alpha1.KubeConfigReference{
			SecretRef: convoyv1alpha1.SecretKeyReference{Name: name + "-kubeconfig"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestDriftSecondCluster(t *testing.T) {
	t.Parallel()
	target, err := env.cp.StartTargetCluster(context.Background(), "east")
	require.NoError(t, err)
	ns := newNamespace(t)
	registerCluster(t, ns, "east", target.Kubeconfig())
	// The kubeconfig of a cluster that is not there: a closed port.
	gone := strings.Replace(string(target.Kubeconfig()), target.URL(), fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), 1)
	require.NotEqual(t, string(target.Kubeconfig()), gone)
	registerCluster(t, ns, "gone", []byte(gone))

	out, err := target.Kubectl("create", "namespace", ns).CombinedOutput()
	require.NoError(t, err, string(out))
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), onCluster("east"))
	newStandInOn(t, target.Config()).apply(ns, "web")

	t.Run("InSync", func(t *testing.T) {
		waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
		d := getDiff(t, ns, "web", "")
		assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result)
		assert.Len(t, d.Objects, 2)
		// Nothing of the render is on the local cluster: the compare looked at east.
		r := kubectl(t, "", "", "get", "deployment", "web", "-n", ns)
		require.Error(t, r.err)
	})
	t.Run("Modified", func(t *testing.T) {
		out, err := target.Kubectl("scale", "deployment", "web", "-n", ns, "--replicas=4").CombinedOutput()
		require.NoError(t, err, string(out))
		cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
		assert.Contains(t, cond.Message, "spec.replicas")
		web := objectDiff(t, getDiff(t, ns, "web", ""), "Deployment", "web")
		assert.Equal(t, subresourcesv1alpha1.ObjectModified, web.Status)
	})
	t.Run("ClusterUnreachable", func(t *testing.T) {
		newDriftRelease(t, ns, "far", webManifests("blue", "1.0"), onCluster("gone"))
		assertUndetermined(t, ns, "far", "ClusterUnreachable", "connection refused")
	})
}
