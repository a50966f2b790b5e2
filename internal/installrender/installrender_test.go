package installrender

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files of the chart's renders")

// root is the repository root, from this package.
const root = "../.."

// allOptions is the values file that sets every option of the chart.
const allOptions = "testdata/all-options.values.yaml"

// KustomizeOnly are the objects of the kustomize install that the chart's
// default render does not hold, and why. The chart's README.md and
// docs/operators/image-and-chart.md list the same.
var KustomizeOnly = map[string]string{
	"/Namespace /convoy-system": "Helm does not template the release's namespace: helm install --create-namespace makes it, and helm uninstall leaves it",
}

// ChartOnly are the objects of the chart's default render that the kustomize
// install does not hold, and why: none.
var ChartOnly = map[string]string{}

// helmLabels are the labels the chart adds to its objects, which the
// kustomize install does not have.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

func render(t *testing.T, values map[string]any, includeCRDs bool) *Chart {
	t.Helper()
	c, err := HelmTemplate(context.Background(), filepath.Join(root, ChartDir), values, Namespace, includeCRDs)
	require.NoError(t, err)
	return c
}

func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	v, err := ReadValues(path)
	require.NoError(t, err)
	return v
}

// TestChartLint runs Helm's lint (pkg/chart/v2/lint, what helm lint
// runs), strict, with the default values and with
// every option set.
func TestChartLint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"defaults", nil},
		{"all options", readValues(t, allOptions)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := lint.RunAll(filepath.Join(root, ChartDir), tc.values, Namespace)
			for _, m := range res.Messages {
				t.Logf("lint: %s", m)
				// An INFO is a suggestion (an icon); warnings and errors
				// fail, as helm lint --strict does.
				assert.LessOrEqual(t, m.Severity, support.InfoSev, "%s", m)
			}
		})
	}
}

// TestChartGolden compares `helm template` of the chart, with the default
// values and with every option set, with the golden files; -update rewrites
// them.
func TestChartGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		values map[string]any
	}{
		{"testdata/default.golden.yaml", nil},
		{"testdata/all-options.golden.yaml", readValues(t, allOptions)},
	} {
		t.Run(filepath.Base(tc.golden), func(t *testing.T) {
			got := render(t, tc.values, false).Manifest
			if *update {
				require.NoError(t, os.WriteFile(tc.golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(tc.golden)
			require.NoError(t, err, "go test -run TestChartGolden -update ./internal/installrender/ writes it")
			assert.Equal(t, string(want), got, "go test -run TestChartGolden -update ./internal/installrender/ rewrites it")
		})
	}
}

// normalize returns a copy of u as the comparison sees it: without the
// labels only Helm adds, and with blank lines collapsed (CollapseBlankLines).
func normalize(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := CollapseBlankLines(u)
	labels := c.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "labels")
	} else {
		c.SetLabels(labels)
	}
	return c
}

func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		k := Key(o)
		require.NotContains(t, m, k, "two objects %s", k)
		m[k] = o
	}
	return m
}

// TestChartHoldsKustomizeInstall renders the kustomize install and the
// chart's defaults (with its CRDs, in the same namespace), lists their
// objects side by side, and checks that they are the same objects with the
// same content but for Helm's labels and the differences of KustomizeOnly
// and ChartOnly.
func TestChartHoldsKustomizeInstall(t *testing.T) {
	k, err := Kustomize(filepath.Join(root, KustomizeDir))
	require.NoError(t, err)
	h := render(t, nil, true).Objects
	kByKey, hByKey := byKey(t, k), byKey(t, h)

	keys := map[string]bool{}
	for key := range kByKey {
		keys[key] = true
	}
	for key := range hByKey {
		keys[key] = true
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-90s %-9s %s\n", "object", "kustomize", "chart")
	var kOnly, hOnly []string
	for _, key := range sortedKeys(keys) {
		_, inK := kByKey[key]
		_, inH := hByKey[key]
		fmt.Fprintf(&table, "%-90s %-9v %v\n", key, inK, inH)
		switch {
		case inK && !inH:
			kOnly = append(kOnly, key)
		case inH && !inK:
			hOnly = append(hOnly, key)
		}
	}
	t.Log("\n" + table.String())
	assert.ElementsMatch(t, sortedKeys(KustomizeOnly), kOnly, "objects of the kustomize install only")
	assert.ElementsMatch(t, sortedKeys(ChartOnly), hOnly, "objects of the chart only")

	for key, ko := range kByKey {
		ho, ok := hByKey[key]
		if !ok {
			continue
		}
		assert.Equal(t, normalize(ko).Object, normalize(ho).Object, "%s differs between the kustomize install and the chart", key)
		// Helm's labels are on every object the chart templates.
		if ho.GetKind() != "CustomResourceDefinition" && ho.GetKind() != "GlobalHealthRuleSet" && !strings.HasPrefix(ho.GetName(), "convoy-view") && !strings.HasPrefix(ho.GetName(), "convoy-edit") {
			assert.Equal(t, "Helm", ho.GetLabels()["app.kubernetes.io/managed-by"], key)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// TestChartImageTagMatchesKustomize checks that the kustomize base and the
// chart name one image by default, with a tag `make image` can write.
func TestChartImageTagMatchesKustomize(t *testing.T) {
	ch, err := loader.Load(filepath.Join(root, ChartDir))
	require.NoError(t, err)
	var kustomization struct {
		Images []struct {
			Name   string `json:"name"`
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	data, err := os.ReadFile(filepath.Join(root, KustomizeDir, "base", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &kustomization))
	require.Len(t, kustomization.Images, 1)
	assert.Equal(t, "ghcr.io/kumodo/convoy-apiserver", kustomization.Images[0].Name)
	assert.Equal(t, ch.Metadata.AppVersion, kustomization.Images[0].NewTag, "the chart's appVersion and the kustomize base's newTag")
	_, err = name.NewTag("ghcr.io/kumodo/convoy-apiserver:"+ch.Metadata.AppVersion, name.StrictValidation)
	require.NoError(t, err, "appVersion %q is a tag", ch.Metadata.AppVersion)

	d := deployment(t, render(t, nil, false).Objects)
	assert.Equal(t, "ghcr.io/kumodo/convoy-apiserver:"+ch.Metadata.AppVersion, d.Spec.Template.Spec.Containers[0].Image)
}

// find returns the object of kind in namespace/name among objs, or nil.
func find(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u := find(objs, "Deployment", Namespace, "convoy-apiserver")
	require.NotNil(t, u)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return &d
}

// TestChartValues checks what single values change in the render.
func TestChartValues(t *testing.T) {
	tlsArgs := []string{"--tls-cert-file=/var/run/serving-cert/tls.crt", "--tls-private-key-file=/var/run/serving-cert/tls.key"}
	for _, tc := range []struct {
		name   string
		values string
		check  func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"a digest wins over the tag", "image: {tag: v9.9.9, digest: 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}", func(t *testing.T, objs []*unstructured.Unstructured) {
			assert.Equal(t, "ghcr.io/kumodo/convoy-apiserver@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", deployment(t, objs).Spec.Template.Spec.Containers[0].Image)
		}},
		{"a tag", "image: {repository: r.example/c, tag: v9.9.9}", func(t *testing.T, objs []*unstructured.Unstructured) {
			assert.Equal(t, "r.example/c:v9.9.9", deployment(t, objs).Spec.Template.Spec.Containers[0].Image)
		}},
		{"the flags", "{server: {securePort: 9443, renderMemoryLimit: 536870912, extraArgs: {resync: 5m, cache: false}}, receiver: {port: 10443}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			assert.Equal(t, []string{"--secure-port=9443", tlsArgs[0], tlsArgs[1], "--leader-elect=true", "--leader-elect-resource-namespace=convoy-system",
				"--max-concurrent-renders=4", "--render-memory-limit=536870912", "--receiver-bind-address=:10443", "-v=2", "--cache=false", "--resync=5m"}, c.Args)
			require.Len(t, c.Ports, 2)
			assert.Equal(t, int32(9443), c.Ports[0].ContainerPort)
			assert.Equal(t, "receiver", c.Ports[1].Name)
			assert.Equal(t, int32(10443), c.Ports[1].ContainerPort)
		}},
		{"the receivers' Service", "receiver: {service: {type: LoadBalancer, port: 8443, annotations: {a.example/b: c}}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			svc := find(objs, "Service", Namespace, "convoy-apiserver-receiver")
			require.NotNil(t, svc)
			typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
			assert.Equal(t, "LoadBalancer", typ)
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			require.Len(t, ports, 1)
			assert.Equal(t, map[string]any{"name": "receiver", "port": float64(8443), "targetPort": "receiver", "protocol": "TCP"}, ports[0])
			assert.Equal(t, map[string]string{"a.example/b": "c"}, svc.GetAnnotations())
		}},
		{"no receivers", "receiver: {enabled: false}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			for _, a := range c.Args {
				assert.NotContains(t, a, "--receiver-")
			}
			require.Len(t, c.Ports, 1)
			assert.Equal(t, "https", c.Ports[0].Name)
			assert.Nil(t, find(objs, "Service", Namespace, "convoy-apiserver-receiver"))
		}},
		{"self-signed for development", "servingCert: {source: selfSigned}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			for _, a := range tlsArgs {
				assert.NotContains(t, c.Args, a)
			}
			api := find(objs, "APIService", "", "v1alpha1.subresources.convoy.kumodo.io")
			require.NotNil(t, api)
			assert.Empty(t, api.GetAnnotations())
			skip, _, _ := unstructured.NestedBool(api.Object, "spec", "insecureSkipTLSVerify")
			assert.True(t, skip)
		}},
		{"a CA bundle of your own", "servingCert: {caBundle: Q0E=}", func(t *testing.T, objs []*unstructured.Unstructured) {
			api := find(objs, "APIService", "", "v1alpha1.subresources.convoy.kumodo.io")
			require.NotNil(t, api)
			assert.Empty(t, api.GetAnnotations())
			ca, _, _ := unstructured.NestedString(api.Object, "spec", "caBundle")
			assert.Equal(t, "Q0E=", ca)
		}},
		{"cert-manager with an issuer of yours", "servingCert: {source: certManager, certManager: {issuerRef: {kind: ClusterIssuer, name: corp-ca}}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			assert.Nil(t, find(objs, "Issuer", Namespace, "convoy-apiserver-selfsigned"))
			assert.Nil(t, find(objs, "Certificate", Namespace, "convoy-apiserver-ca"))
			cert := find(objs, "Certificate", Namespace, "convoy-apiserver-serving-cert")
			require.NotNil(t, cert)
			ref, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
			assert.Equal(t, map[string]string{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "corp-ca"}, ref)
			dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			assert.Equal(t, []string{"convoy-apiserver.convoy-system.svc", "convoy-apiserver.convoy-system.svc.cluster.local"}, dns)
		}},
		{"namespaces that opt in", "tenancy: {namespaces: [a, b]}", func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, ns := range []string{"a", "b"} {
				assert.NotNil(t, find(objs, "RoleBinding", ns, "convoy-apiserver:impersonate"), ns)
			}
			assert.Nil(t, find(objs, "ClusterRoleBinding", "", "convoy-apiserver:impersonate"))
		}},
		{"cluster-wide impersonation", "tenancy: {mode: cluster}", func(t *testing.T, objs []*unstructured.Unstructured) {
			assert.NotNil(t, find(objs, "ClusterRoleBinding", "", "convoy-apiserver:impersonate"))
		}},
		{"no PDB, rule sets or user roles", "{podDisruptionBudget: {enabled: false}, defaultRuleSets: false, userRoles: false}", func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				assert.NotContains(t, []string{"PodDisruptionBudget", "GlobalHealthRuleSet"}, o.GetKind())
				assert.NotContains(t, []string{"convoy-view", "convoy-edit"}, o.GetName())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tc.values), &values))
			tc.check(t, render(t, values, false).Objects)
		})
	}
}

// TestChartRefuses checks the values the chart refuses.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"an unknown certificate source", "servingCert: {source: vault}", "/servingCert/source"},
		{"an unknown tenancy mode", "tenancy: {mode: everyone}", "/tenancy/mode"},
		{"namespaces with cluster mode", "tenancy: {mode: cluster, namespaces: [a]}", "tenancy.namespaces"},
		{"a CA bundle with cert-manager", "servingCert: {source: certManager, caBundle: Q0E=}", "servingCert.caBundle"},
		{"the receivers on the API's port", "receiver: {port: 8443}", "receiver.port is server.securePort"},
		{"an unknown Service type", "receiver: {service: {type: ExternalName}}", "/receiver/service/type"},
		{"an unknown value", "replica: 3", "replica"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tc.values), &values))
			_, err := HelmTemplate(context.Background(), filepath.Join(root, ChartDir), values, Namespace, false)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestChartNotes checks that the notes carry the warnings of the modes that
// need one.
func TestChartNotes(t *testing.T) {
	notes := render(t, map[string]any{"tenancy": map[string]any{"mode": "cluster"}, "servingCert": map[string]any{"source": "selfSigned"}}, false).Notes
	assert.Contains(t, notes, "WARNING: tenancy.mode=cluster")
	assert.Contains(t, notes, "WARNING: servingCert.source=selfSigned")
	defaults := render(t, nil, false).Notes
	assert.Contains(t, defaults, "kubectl create rolebinding convoy-apiserver:impersonate")
	assert.Contains(t, defaults, "convoy-system/convoy-apiserver-receiver", "where deliveries go")
	assert.NotContains(t, render(t, map[string]any{"receiver": map[string]any{"enabled": false}}, false).Notes, "convoy-apiserver-receiver")
}

// TestChartCopiesAreCurrent checks that the chart's copies (crds/, files/)
// are those of their sources, byte for byte (hack/update-codegen.sh makes
// them).
func TestChartCopiesAreCurrent(t *testing.T) {
	for _, tc := range []struct{ copies, sources string }{
		{"crds/*.yaml", "artifacts/crds/*.yaml"},
		{"files/rules/*.yaml", "artifacts/rules/*.yaml"},
		{"files/user-roles.yaml", "artifacts/deploy/base/user-roles.yaml"},
	} {
		copies, err := filepath.Glob(filepath.Join(root, ChartDir, tc.copies))
		require.NoError(t, err)
		sources, err := filepath.Glob(filepath.Join(root, tc.sources))
		require.NoError(t, err)
		require.NotEmpty(t, sources)
		require.Len(t, copies, len(sources), tc.copies)
		for i := range sources {
			assert.Equal(t, filepath.Base(sources[i]), filepath.Base(copies[i]))
			want, err := os.ReadFile(sources[i])
			require.NoError(t, err)
			got, err := os.ReadFile(copies[i])
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "%s is stale: hack/update-codegen.sh", copies[i])
		}
	}
}
