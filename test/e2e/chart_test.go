//go:build unix

package e2e

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/kumodo/convoy-apiserver/internal/installrender"
)

// chartTestCRDs are the CRDs of the chart's optional kinds (cert-manager's
// Certificate and Issuer, the Prometheus Operator's ServiceMonitor and
// PrometheusRule), vendored from Go modules by hack/update-test-crds.sh.
const chartTestCRDs = "test/e2e/testdata/crds"

// TestChartServerDryRun sends every object of the kustomize install and of
// the Helm chart (its default values, every option set, and the development
// certificate) to a kube-apiserver of its own as a server-side apply dry
// run: each must be accepted. The cluster first gets, for real, the
// namespaces the renders name, convoy's CRDs (the rule sets are custom
// resources) and the CRDs of the optional kinds.
func TestChartServerDryRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target, err := env.cp.StartTargetCluster(ctx, "chart")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, target.Stop()) })
	kc := target.KubeconfigPath()

	// The namespaces: the release's, those that opt in (all-options
	// values) and the metrics reader's.
	for _, ns := range []string{installrender.Namespace, "team-a", "team-b", "monitoring"} {
		mustKubectl(t, kc, "", "create", "namespace", ns)
	}
	for _, dir := range []string{"artifacts/crds", chartTestCRDs} {
		path := filepath.Join(env.root, dir)
		mustKubectl(t, kc, "", "apply", "--server-side", "--field-manager="+deployFieldManager, "-f", path)
		mustKubectl(t, kc, "", "wait", "--for=condition=Established", "--timeout=60s", "-f", path)
	}

	dyn, err := dynamic.NewForConfig(target.Config())
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(target.Config())
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	allOptions, err := installrender.ReadValues(filepath.Join(env.root, "internal/installrender/testdata/all-options.values.yaml"))
	require.NoError(t, err)
	chart := func(values map[string]any) func(t *testing.T) []*unstructured.Unstructured {
		return func(t *testing.T) []*unstructured.Unstructured {
			c, err := installrender.HelmTemplate(ctx, filepath.Join(env.root, installrender.ChartDir), values, installrender.Namespace, true)
			require.NoError(t, err)
			return c.Objects
		}
	}
	kustomization := func(dir string) func(t *testing.T) []*unstructured.Unstructured {
		return func(t *testing.T) []*unstructured.Unstructured {
			objs, err := installrender.Kustomize(filepath.Join(env.root, dir))
			require.NoError(t, err)
			return objs
		}
	}
	for _, tc := range []struct {
		name   string
		render func(t *testing.T) []*unstructured.Unstructured
		// kinds that must be among the objects, so that the case tests
		// what it is for.
		kinds []string
	}{
		{"kustomize", kustomization(installrender.KustomizeDir), []string{"Namespace", "Deployment", "APIService", "GlobalHealthRuleSet"}},
		{"kustomize dev", kustomization(filepath.Join(installrender.KustomizeDir, "dev")), []string{"Deployment", "APIService"}},
		{"chart defaults", chart(nil), []string{"CustomResourceDefinition", "Deployment", "APIService", "PodDisruptionBudget", "GlobalHealthRuleSet"}},
		{"chart all options", chart(allOptions), []string{"ServiceMonitor", "PrometheusRule", "Certificate", "Issuer", "RoleBinding", "ClusterRoleBinding"}},
		{"chart cluster-wide, self-signed", chart(map[string]any{
			"tenancy":     map[string]any{"mode": "cluster"},
			"servingCert": map[string]any{"source": "selfSigned"},
		}), []string{"ClusterRoleBinding", "APIService"}},
		{"chart with an issuer of yours", chart(map[string]any{
			"servingCert": map[string]any{"source": "certManager", "certManager": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}}},
			"metrics":     map[string]any{"readers": []any{map[string]any{"kind": "Group", "name": "monitoring", "apiGroup": "rbac.authorization.k8s.io"}}},
		}), []string{"Certificate", "ClusterRole"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.render(t)
			kinds := map[string]bool{}
			for _, o := range objs {
				kinds[o.GetKind()] = true
			}
			for _, k := range tc.kinds {
				assert.True(t, kinds[k], "the render holds a %s", k)
			}
			for _, o := range objs {
				key := installrender.Key(o)
				gvk := o.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if !assert.NoError(t, err, "%s: no resource serves it", key) {
					continue
				}
				var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					if !assert.NotEmpty(t, o.GetNamespace(), "%s names no namespace", key) {
						continue
					}
					ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
				} else {
					assert.Empty(t, o.GetNamespace(), "cluster-scoped %s has a namespace", key)
				}
				_, err = ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{
					FieldManager: deployFieldManager,
					Force:        true,
					DryRun:       []string{metav1.DryRunAll},
				})
				assert.NoError(t, err, "%s is refused by the server-side dry run (%s)", key, apierrors.ReasonForError(err))
			}
		})
	}
}
