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

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.e2e.convoy.test}
spec:
  group: e2e.convoy.test
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 1}
              color: {type: string, default: grey}
`

// Both sides of the compare come from the API server, so server-side
// defaults (built-in and CRD schema) and admission mutations are on both
// sides and do not show as drift.
func TestDriftServerDefaultsAndMutatingPolicy(t *testing.T) {
	// Not parallel: it creates a CRD and a cluster-scoped MutatingAdmissionPolicy.
	mustKubectl(t, "", gadgetCRD, "apply", "-f", "-")
	mustKubectl(t, "", "", "wait", "--for=condition=Established", "crd/gadgets.e2e.convoy.test")

	ns := newNamespace(t)
	mustKubectl(t, "", "", "label", "namespace", ns, "e2e-mutate="+ns)
	policy := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"e2e.convoy.test/mutated": "true"}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  matchResources:
    namespaceSelector:
      matchLabels: {e2e-mutate: %[1]s}
`, ns)
	mustKubectl(t, "", policy, "apply", "-f", "-")
	t.Cleanup(func() { kubectl(t, "", "", "delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", ns) })
	eventually(t, "the mutating policy at work", func(ctx context.Context) error {
		r := kubectl(t, "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe, namespace: "+ns+"}\n",
			"create", "--dry-run=server", "-f", "-", "-o", `jsonpath={.metadata.annotations.e2e\.convoy\.test/mutated}`)
		if r.err != nil || r.stdout != "true" {
			return fmt.Errorf("not mutated yet: %q %s", r.stdout, r.stderr)
		}
		return nil
	})

	files := webManifests("blue", "1.0")
	files["gadget.yaml"] = "apiVersion: e2e.convoy.test/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {}\n"
	newDriftRelease(t, ns, "web", files)
	newStandIn(t).apply(ns, "web")

	live := mustKubectl(t, "", "", "get", "gadget", "g", "-n", ns, "-o", "jsonpath={.spec.size} {.spec.color}")
	assert.Equal(t, "1 grey", live, "the CRD schema defaulted the Gadget")
	live = mustKubectl(t, "", "", "get", "configmap", "settings", "-n", ns, "-o", `jsonpath={.metadata.annotations.e2e\.convoy\.test/mutated}`)
	assert.Equal(t, "true", live, "the policy mutated the ConfigMap")

	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	d := getDiff(t, ns, "web", "")
	require.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result, "%+v", d.Objects)
	assert.Len(t, d.Objects, 3)
}
