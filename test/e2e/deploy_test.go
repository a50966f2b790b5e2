//go:build unix

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/installrender"
)

// deployFieldManager is the server-side apply field manager of the deploy tests.
const deployFieldManager = "convoy-deploy-e2e"

// The names artifacts/deploy ties together.
const (
	deployNamespace  = "convoy-system"
	deployName       = "convoy-apiserver"
	servingSecret    = "convoy-apiserver-serving-cert"
	apiServiceName   = "v1alpha1.subresources.convoy.kumodo.io"
	injectCAFrom     = "cert-manager.io/inject-ca-from"
	authReaderName   = "convoy-apiserver:extension-apiserver-authentication-reader"
	deployDir        = "artifacts/deploy"
	deployDevDir     = "artifacts/deploy/dev"
	deployBaseDir    = "artifacts/deploy/base"
	receiverService  = "convoy-apiserver-receiver"
	receiverIngress  = "artifacts/deploy/receiver-ingress.yaml"
	certManagerDir   = "artifacts/deploy/cert-manager"
	userRolesFile    = "artifacts/deploy/base/user-roles.yaml"
	convoyViewRole   = "convoy-view"
	convoyEditRole   = "convoy-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
)

// The arguments of the Deployment, checked exactly: the other pieces (the
// Secret volume, the RBAC of the Lease) follow from them.
var (
	prodArgs = []string{
		"--secure-port=8443",
		"--tls-cert-file=/var/run/serving-cert/tls.crt",
		"--tls-private-key-file=/var/run/serving-cert/tls.key",
		"--leader-elect=true",
		"--leader-elect-resource-namespace=convoy-system",
		"--max-concurrent-renders=4",
		"--render-memory-limit=268435456",
		"--receiver-bind-address=:9443",
		"-v=2",
	}
	devArgs = []string{
		"--secure-port=8443",
		"--leader-elect=true",
		"--leader-elect-resource-namespace=convoy-system",
		"--receiver-bind-address=:9443",
		"-v=2",
	}
)

// decodeObjects decodes a stream of YAML documents; empty documents are skipped.
func decodeObjects(t *testing.T, r io.Reader, what string) []*unstructured.Unstructured {
	t.Helper()
	data, err := io.ReadAll(r)
	require.NoError(t, err, "reading %s", what)
	objs, err := installrender.Decode(data)
	require.NoError(t, err, "decoding %s", what)
	return objs
}

// sourceObjects decodes every YAML file that matches the glob (relative to
// the repository root).
func sourceObjects(t *testing.T, glob string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.root, glob))
	require.NoError(t, err)
	require.NotEmpty(t, files, glob)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		objs = append(objs, decodeObjects(t, bytes.NewReader(readFile(t, f)), f)...)
	}
	return objs
}

// kustomize renders a kustomization directory with the control plane's kubectl.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out := mustKubectl(t, "", "", "kustomize", dir)
	objs := decodeObjects(t, strings.NewReader(out), "kubectl kustomize "+dir)
	require.NotEmpty(t, objs)
	return objs
}

func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		k := installrender.Key(o)
		require.NotContains(t, m, k, "two objects %s", k)
		m[k] = o
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// find returns the object of kind (group/Kind) and namespace/name among objs.
func find(t *testing.T, objs []*unstructured.Unstructured, groupKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	group, kind, ok := strings.Cut(groupKind, "/")
	require.True(t, ok, "group/Kind: %s", groupKind)
	gk := schema.GroupKind{Group: group, Kind: kind}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == gk && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	require.Failf(t, "object not rendered", "%s %s/%s", groupKind, namespace, name)
	return nil
}

// typed converts an unstructured object into out through JSON.
func typed(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	b, err := u.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, out))
}

func renderedDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	typed(t, find(t, objs, "apps/Deployment", deployNamespace, deployName), &d)
	return &d
}

// TestDeployRender renders artifacts/deploy and checks that it holds exactly
// the CRDs, RBAC and rule sets of artifacts/ unchanged plus its own objects,
// that every namespaced object names its namespace (kube-system only for the
// authentication-reader binding) and that the objects agree with each other.
func TestDeployRender(t *testing.T) {
	t.Parallel()
	rendered := kustomize(t, filepath.Join(env.root, deployDir))

	// Exactly the sources, unchanged: kustomize moved no namespace and
	// dropped or altered nothing.
	var want []*unstructured.Unstructured
	for _, glob := range []string{"artifacts/crds/*.yaml", "artifacts/rbac/*.yaml", "artifacts/rules/*.yaml",
		deployBaseDir + "/user-roles.yaml", deployBaseDir + "/metrics-reader.yaml", deployBaseDir + "/deployment.yaml", deployBaseDir + "/pdb.yaml", deployBaseDir + "/apiservice.yaml", deployBaseDir + "/receiver.yaml"} {
		want = append(want, sourceObjects(t, glob)...)
	}
	got, wantByKey := byKey(t, rendered), byKey(t, want)
	require.Equal(t, sortedKeys(wantByKey), sortedKeys(got))
	for k, w := range wantByKey {
		g := got[k]
		if w.GetKind() == "GlobalHealthRuleSet" {
			// kustomize reads a folded scalar (>-) whose next line is more
			// indented with an extra line break ("exists(c,\n\n  (c.type"),
			// where the YAML spec and kubectl -f have one. For the CEL of the
			// rule sets that is whitespace between tokens: compare without it.
			w, g = installrender.CollapseBlankLines(w), installrender.CollapseBlankLines(g)
		}
		assert.Equal(t, w.Object, g.Object, "%s differs from its source", k)
	}

	// Every namespaced object has its namespace in the manifest (kubectl would
	// otherwise put it in the namespace of the user's context), and it is
	// convoy-system except for the RoleBinding that must be in kube-system.
	dc, err := discovery.NewDiscoveryClientForConfig(env.cp.AdminConfig())
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, o := range rendered {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, installrender.Key(o))
		switch {
		case m.Scope.Name() != meta.RESTScopeNameNamespace:
			assert.Empty(t, o.GetNamespace(), "cluster-scoped %s has a namespace", installrender.Key(o))
		case gvk.Kind == "RoleBinding" && o.GetName() == authReaderName:
			assert.Equal(t, "kube-system", o.GetNamespace(), installrender.Key(o))
		default:
			assert.Equal(t, deployNamespace, o.GetNamespace(), installrender.Key(o))
		}
	}
	find(t, rendered, "/Namespace", "", deployNamespace)

	d := renderedDeployment(t, rendered)
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	assert.Equal(t, deployName, pod.ServiceAccountName)
	find(t, rendered, "/ServiceAccount", deployNamespace, pod.ServiceAccountName)
	assert.Equal(t, prodArgs, c.Args)
	// The tag of a release, the chart's appVersion
	// (installrender.TestChartImageTagMatchesKustomize).
	assert.Equal(t, "ghcr.io/kumodo/convoy-apiserver:v0.1.0", c.Image)
	// The aggregated API and the webhook receivers on ports of their own.
	require.Len(t, c.Ports, 2)
	assert.Equal(t, corev1.ContainerPort{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}, c.Ports[0])
	assert.Equal(t, corev1.ContainerPort{Name: "receiver", ContainerPort: 9443, Protocol: corev1.ProtocolTCP}, c.Ports[1])
	assert.Contains(t, c.Args, "--receiver-bind-address=:9443", "the listener of deliveries binds the port receiver")
	for path, probe := range map[string]*corev1.Probe{"/livez": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		require.NotNil(t, probe, path)
		require.NotNil(t, probe.HTTPGet, path)
		assert.Equal(t, path, probe.HTTPGet.Path)
		assert.Equal(t, corev1.URISchemeHTTPS, probe.HTTPGet.Scheme, path)
		assert.Equal(t, "https", probe.HTTPGet.Port.String(), path)
	}
	assert.Equal(t, "100m", c.Resources.Requests.Cpu().String())
	assert.Equal(t, "128Mi", c.Resources.Requests.Memory().String())
	assert.False(t, c.Resources.Limits.Memory().IsZero(), "a memory limit")
	// GOMEMLIMIT, the Go runtime's soft limit of the server, about 10% under
	// what the chart processes leave of the memory limit: each of the
	// --max-concurrent-renders may take --render-memory-limit in the same
	// container.
	var goMemLimit string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			goMemLimit = e.Value
		}
	}
	require.True(t, strings.HasSuffix(goMemLimit, "MiB"), "GOMEMLIMIT %q in MiB", goMemLimit)
	mib, err := strconv.ParseInt(strings.TrimSuffix(goMemLimit, "MiB"), 10, 64)
	require.NoError(t, err)
	renders, renderMemory := int64(-1), int64(-1)
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--max-concurrent-renders="); ok {
			renders, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
		if v, ok := strings.CutPrefix(a, "--render-memory-limit="); ok {
			renderMemory, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
	}
	require.Positive(t, renders, "the Deployment says how many renders run at once")
	require.Positive(t, renderMemory, "and how much memory each may take")
	limit := c.Resources.Limits.Memory().Value() - renders*renderMemory
	assert.Less(t, mib<<20, limit, "GOMEMLIMIT under what the renders leave of the memory limit")
	assert.Greater(t, mib<<20, limit*8/10, "GOMEMLIMIT within 20%% of what the renders leave")

	// Non-root, read-only root filesystem, nothing extra.
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.Equal(t, new(true), sc.RunAsNonRoot)
	assert.Equal(t, new(int64(65532)), sc.RunAsUser)
	assert.Equal(t, new(true), sc.ReadOnlyRootFilesystem)
	assert.Equal(t, new(false), sc.AllowPrivilegeEscalation)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	require.NotNil(t, sc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	require.NotNil(t, pod.SecurityContext)
	assert.Equal(t, new(true), pod.SecurityContext.RunAsNonRoot)

	// The TLS flags point into the mount of the optional Secret volume; /tmp
	// is writable.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	certMount, ok := mounts["/var/run/serving-cert"]
	require.True(t, ok, "serving-cert mount")
	assert.True(t, certMount.ReadOnly)
	secret := volumes[certMount.Name].Secret
	require.NotNil(t, secret, "the serving-cert volume is a Secret")
	assert.Equal(t, servingSecret, secret.SecretName)
	assert.Equal(t, new(true), secret.Optional)
	tmp, ok := mounts["/tmp"]
	require.True(t, ok, "/tmp mount")
	assert.NotNil(t, volumes[tmp.Name].EmptyDir, "/tmp is an emptyDir")

	// Spread over nodes.
	require.NotEmpty(t, pod.TopologySpreadConstraints)
	assert.Equal(t, corev1.LabelHostname, pod.TopologySpreadConstraints[0].TopologyKey)
	podLabels := labels.Set(d.Spec.Template.Labels)
	spreadSel, err := metav1.LabelSelectorAsSelector(pod.TopologySpreadConstraints[0].LabelSelector)
	require.NoError(t, err)
	assert.True(t, spreadSel.Matches(podLabels), "the spread constraint selects the Pods")

	// The Service selects the Pods and sends 443 to their https port.
	var svc corev1.Service
	typed(t, find(t, rendered, "/Service", deployNamespace, deployName), &svc)
	assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "the Service selects the Pods")
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(443), svc.Spec.Ports[0].Port)
	assert.Equal(t, "https", svc.Spec.Ports[0].TargetPort.String())

	// The receivers' Service selects the Pods and sends 443 to their
	// receiver port; its port is not named https, so that a ServiceMonitor
	// of the port https does not scrape the listener of deliveries.
	var receiverSvc corev1.Service
	typed(t, find(t, rendered, "/Service", deployNamespace, receiverService), &receiverSvc)
	assert.Equal(t, corev1.ServiceTypeClusterIP, receiverSvc.Spec.Type)
	assert.True(t, labels.SelectorFromSet(receiverSvc.Spec.Selector).Matches(podLabels), "the receivers' Service selects the Pods")
	require.Len(t, receiverSvc.Spec.Ports, 1)
	assert.Equal(t, int32(443), receiverSvc.Spec.Ports[0].Port)
	assert.Equal(t, "receiver", receiverSvc.Spec.Ports[0].TargetPort.String())
	assert.NotEqual(t, "https", receiverSvc.Spec.Ports[0].Name)

	// The PDB selects the Pods.
	var pdb policyv1.PodDisruptionBudget
	typed(t, find(t, rendered, "policy/PodDisruptionBudget", deployNamespace, deployName), &pdb)
	require.NotNil(t, pdb.Spec.MinAvailable)
	assert.Equal(t, 1, pdb.Spec.MinAvailable.IntValue())
	pdbSel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, pdbSel.Matches(podLabels), "the PDB selects the Pods")

	// The APIService points at the Service; cert-manager injects the CA of
	// the Certificate whose Secret the Deployment mounts.
	apiService := find(t, rendered, "apiregistration.k8s.io/APIService", "", apiServiceName)
	spec, _, _ := unstructured.NestedMap(apiService.Object, "spec")
	assert.Equal(t, map[string]any{
		"group": "subresources.convoy.kumodo.io", "version": "v1alpha1",
		"groupPriorityMinimum": float64(100), "versionPriority": float64(100),
		"service": map[string]any{"namespace": deployNamespace, "name": deployName, "port": float64(443)},
	}, spec)
	assert.Equal(t, deployNamespace+"/"+servingSecret, apiService.GetAnnotations()[injectCAFrom])

	// The leader-election namespace of the flags is where the server may
	// keep its Lease (named convoy-apiserver: the Deployment keeps the
	// default --leader-elect-resource-name).
	leaseRole := find(t, rendered, "rbac.authorization.k8s.io/Role", deployNamespace, "convoy-apiserver:leader-election")
	var role rbacv1.Role
	typed(t, leaseRole, &role)
	var leaseVerbs []string
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "coordination.k8s.io") && slices.Contains(r.Resources, "leases") &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, deployName)) {
			leaseVerbs = append(leaseVerbs, r.Verbs...)
		}
	}
	assert.Subset(t, leaseVerbs, []string{"get", "create", "update"})

	// Webhook receivers: the server lists and watches Receivers and writes
	// their status; it reads Secrets with no role of its own (a Receiver's
	// Secret is read as the Receiver's ServiceAccount).
	var server rbacv1.ClusterRole
	typed(t, find(t, rendered, "rbac.authorization.k8s.io/ClusterRole", "", deployName), &server)
	for _, v := range []string{"list", "watch"} {
		assert.True(t, hasRule(server.Rules, "convoy.kumodo.io", "receivers", v), "receivers %s", v)
	}
	assert.True(t, hasRule(server.Rules, "convoy.kumodo.io", "receivers/status", "patch"))
	for _, r := range server.Rules {
		assert.NotContains(t, r.Resources, "secrets", "convoy-apiserver's own role names no Secret")
		assert.NotContains(t, r.Resources, "*")
	}
}

// TestDeployReceiverIngress checks the example Ingress of the receivers,
// which artifacts/deploy does not apply: it routes only the prefix /hook/,
// only to the receivers' Service and its port, re-encrypting to HTTPS, and
// the control plane accepts it (server-side dry run).
func TestDeployReceiverIngress(t *testing.T) {
	t.Parallel()
	for _, o := range kustomize(t, filepath.Join(env.root, deployDir)) {
		assert.NotEqual(t, "Ingress", o.GetKind(), "artifacts/deploy applies no Ingress")
	}
	objs := sourceObjects(t, receiverIngress)
	require.Len(t, objs, 1)
	var ing networkingv1.Ingress
	typed(t, objs[0], &ing)
	assert.Equal(t, deployNamespace, ing.Namespace, "in the namespace of the Service")
	assert.Equal(t, "HTTPS", ing.Annotations["nginx.ingress.kubernetes.io/backend-protocol"], "TLS again to the Pods")
	assert.NotEmpty(t, ing.Spec.TLS, "TLS towards the senders")
	assert.Nil(t, ing.Spec.DefaultBackend)
	require.Len(t, ing.Spec.Rules, 1)
	require.NotNil(t, ing.Spec.Rules[0].HTTP)
	require.Len(t, ing.Spec.Rules[0].HTTP.Paths, 1)
	p := ing.Spec.Rules[0].HTTP.Paths[0]
	assert.Equal(t, "/hook/", p.Path)
	require.NotNil(t, p.PathType)
	assert.Equal(t, networkingv1.PathTypePrefix, *p.PathType)
	require.NotNil(t, p.Backend.Service)
	assert.Equal(t, receiverService, p.Backend.Service.Name)
	var svc corev1.Service
	typed(t, find(t, kustomize(t, filepath.Join(env.root, deployDir)), "/Service", deployNamespace, receiverService), &svc)
	assert.Equal(t, svc.Spec.Ports[0].Name, p.Backend.Service.Port.Name, "the Service's port")

	out := mustKubectl(t, "", "", "apply", "--server-side", "--dry-run=server", "--field-manager="+deployFieldManager,
		"-f", filepath.Join(env.root, receiverIngress))
	assert.Contains(t, out, "serverside-applied (server dry run)")
}

// TestDeployDevOverlay renders artifacts/deploy/dev: the same objects, only
// without the TLS flags and with an APIService that skips verification.
func TestDeployDevOverlay(t *testing.T) {
	t.Parallel()
	base := byKey(t, kustomize(t, filepath.Join(env.root, deployDir)))
	devObjs := kustomize(t, filepath.Join(env.root, deployDevDir))
	dev := byKey(t, devObjs)
	require.Equal(t, sortedKeys(base), sortedKeys(dev))

	d := renderedDeployment(t, devObjs)
	assert.Equal(t, devArgs, d.Spec.Template.Spec.Containers[0].Args)
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		assert.NotContains(t, a, "tls", "the dev overlay serves a self-signed certificate")
	}
	apiService := find(t, devObjs, "apiregistration.k8s.io/APIService", "", apiServiceName)
	skip, _, _ := unstructured.NestedBool(apiService.Object, "spec", "insecureSkipTLSVerify")
	assert.True(t, skip)
	assert.NotContains(t, apiService.GetAnnotations(), injectCAFrom, "no CA injection next to insecureSkipTLSVerify")

	// Nothing else differs.
	for k, b := range base {
		o := dev[k].DeepCopy()
		switch {
		case o.GetKind() == "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			containers[0].(map[string]any)["args"] = toAnySlice(prodArgs)
			require.NoError(t, unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"))
		case o.GetKind() == "APIService":
			unstructured.RemoveNestedField(o.Object, "spec", "insecureSkipTLSVerify")
			o.SetAnnotations(b.GetAnnotations())
		}
		assert.Equal(t, b.Object, o.Object, "%s differs between base and dev beyond TLS", k)
	}
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestDeployCertManagerComponent renders artifacts/deploy with the
// cert-manager component from an overlay outside the repository, as a user
// would, and checks that the names agree: the Certificate the APIService
// annotation names writes the Secret the Deployment mounts, for the Service's
// DNS name, from a CA Issuer whose CA comes from the self-signed Issuer.
func TestDeployCertManagerComponent(t *testing.T) {
	t.Parallel()
	overlay := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(overlay, filepath.Join(env.root, p))
		require.NoError(t, err)
		return r
	}
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), fmt.Appendf(nil,
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n- %s\n",
		rel(deployDir), rel(certManagerDir)), 0o644))
	objs := kustomize(t, overlay)
	assert.Len(t, objs, len(kustomize(t, filepath.Join(env.root, deployDir)))+4, "the component adds two Issuers and two Certificates")

	apiService := find(t, objs, "apiregistration.k8s.io/APIService", "", apiServiceName)
	certNS, certName, ok := strings.Cut(apiService.GetAnnotations()[injectCAFrom], "/")
	require.True(t, ok)
	serving := find(t, objs, "cert-manager.io/Certificate", certNS, certName)
	secretName, _, _ := unstructured.NestedString(serving.Object, "spec", "secretName")
	assert.Equal(t, servingSecret, secretName)
	assert.Equal(t, deployNamespace, certNS, "the Certificate is in the Deployment's namespace")
	dnsNames, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
	assert.Contains(t, dnsNames, deployName+"."+deployNamespace+".svc", "the name the aggregator checks")

	caIssuerName, _, _ := unstructured.NestedString(serving.Object, "spec", "issuerRef", "name")
	caIssuer := find(t, objs, "cert-manager.io/Issuer", deployNamespace, caIssuerName)
	caSecret, _, _ := unstructured.NestedString(caIssuer.Object, "spec", "ca", "secretName")
	require.NotEmpty(t, caSecret, "the serving certificate comes from a CA Issuer")
	var ca *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Certificate" {
			if s, _, _ := unstructured.NestedString(o.Object, "spec", "secretName"); s == caSecret {
				ca = o
			}
		}
	}
	require.NotNil(t, ca, "a Certificate writes the CA Secret %s", caSecret)
	isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA")
	assert.True(t, isCA)
	rootName, _, _ := unstructured.NestedString(ca.Object, "spec", "issuerRef", "name")
	root := find(t, objs, "cert-manager.io/Issuer", deployNamespace, rootName)
	_, selfSigned, _ := unstructured.NestedMap(root.Object, "spec", "selfSigned")
	assert.True(t, selfSigned, "the CA is self-signed")
}

// TestDeployCopiesAreCurrent fails when artifacts/deploy/base/copies differs
// from artifacts/crds, artifacts/rbac or artifacts/rules.
func TestDeployCopiesAreCurrent(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"crds", "rbac", "rules"} {
		src, err := filepath.Glob(filepath.Join(env.root, "artifacts", dir, "*.yaml"))
		require.NoError(t, err)
		dst, err := filepath.Glob(filepath.Join(env.root, deployBaseDir, "copies", dir, "*.yaml"))
		require.NoError(t, err)
		base := func(paths []string) []string {
			var out []string
			for _, p := range paths {
				out = append(out, filepath.Base(p))
			}
			return out
		}
		fix := fmt.Sprintf("cp artifacts/%s/*.yaml %s/copies/%s/ (and list new files in %s/kustomization.yaml)", dir, deployBaseDir, dir, deployBaseDir)
		require.Equal(t, base(src), base(dst), "artifacts/%s and its copy hold other files: %s", dir, fix)
		for _, p := range src {
			assert.True(t, bytes.Equal(readFile(t, p), readFile(t, filepath.Join(env.root, deployBaseDir, "copies", dir, filepath.Base(p)))),
				"%s differs from its copy: %s", p, fix)
		}
	}
}

// TestDeployArgsParse checks that convoy-apiserver accepts the arguments of
// both Deployments: with --help it parses every flag and value and exits 0,
// and an unknown flag or a bad value exits 1.
func TestDeployArgsParse(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(env.convoyBin, args...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, dir := range []string{deployDir, deployDevDir} {
		args := renderedDeployment(t, kustomize(t, filepath.Join(env.root, dir))).Spec.Template.Spec.Containers[0].Args
		out, err := run(append(slices.Clone(args), "--help")...)
		require.NoError(t, err, "convoy-apiserver does not accept the arguments of %s: %s", dir, lastLines(out, 3))
	}
	_, err := run("--no-such-flag", "--help")
	assert.Error(t, err, "an unknown flag fails")
	_, err = run("--leader-elect=maybe", "--help")
	assert.Error(t, err, "a bad value fails")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// harnessFieldManager is the field manager the control plane (internal/
// controlplane) applies the CRDs, RBAC, rules, the Service and the APIService
// with.
const harnessFieldManager = "convoy-controlplane"

// TestDeployServerDryRun sends artifacts/deploy and the dev overlay to the
// control plane as server-side apply dry runs: every object must be accepted
// (the Deployment too, though it would never run: there is no kubelet).
//
// The dry runs apply as the harness's own field manager, so that they replace
// what the harness wrote instead of merging with it: the harness's Service is
// of type ExternalName with its own port, also named https (merged: "Duplicate
// value"), and its APIService has a caBundle (merged with the dev overlay's
// insecureSkipTLSVerify: refused). Nothing is changed: it is a dry run.
func TestDeployServerDryRun(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{deployDir, deployDevDir} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			n := len(kustomize(t, filepath.Join(env.root, dir)))
			out := mustKubectl(t, "", "", "apply", "--server-side", "--dry-run=server", "--force-conflicts",
				"--field-manager="+harnessFieldManager, "-k", filepath.Join(env.root, dir))
			lines := strings.Split(strings.TrimSpace(out), "\n")
			assert.Len(t, lines, n, "one line per object:\n%s", out)
			for _, l := range lines {
				assert.Contains(t, l, "serverside-applied (server dry run)")
			}
		})
	}
}

// TestDeployFreshCluster installs artifacts/deploy for real on an empty
// cluster (a kube-apiserver of its own) the way docs/operators/install.md
// says, switches it to the dev overlay and back, and checks what the objects
// look like there.
func TestDeployFreshCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target, err := env.cp.StartTargetCluster(ctx, "deploy")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, target.Stop()) })
	kc := target.KubeconfigPath()
	targetClient, err := kubernetes.NewForConfig(target.Config())
	require.NoError(t, err)
	apply := func(dir string) kubectlResult {
		return kubectl(t, kc, "", "apply", "--server-side", "--field-manager="+deployFieldManager, "-k", filepath.Join(env.root, dir))
	}

	// In one go, the rule sets cannot be mapped: their CRDs are created by
	// the same command. Everything else is applied.
	first := apply(deployDir)
	require.Error(t, first.err, "the first apply on an empty cluster fails for the rule sets:\n%s", first.stdout)
	assert.Contains(t, first.stderr, "ensure CRDs are installed first")
	for _, l := range strings.Split(strings.TrimSpace(first.stderr), "\n") {
		if strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "Error") {
			assert.Contains(t, l, "GlobalHealthRuleSet", "only the rule sets fail: %s", l)
		}
	}

	// docs/operators/install.md: the CRDs first, wait until they are served,
	// then everything.
	mustKubectl(t, kc, "", "apply", "--server-side", "--field-manager="+deployFieldManager, "-f", filepath.Join(env.root, "artifacts/crds"))
	mustKubectl(t, kc, "", "wait", "--for=condition=Established", "--timeout=60s", "-f", filepath.Join(env.root, "artifacts/crds"))
	second := apply(deployDir)
	require.NoError(t, second.err, second.stderr)
	rendered := kustomize(t, filepath.Join(env.root, deployDir))
	out := mustKubectl(t, kc, "", "get", "-k", filepath.Join(env.root, deployDir), "-o", "name")
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), len(rendered), "every object exists:\n%s", out)
	out = mustKubectl(t, kc, "", "get", "rolebinding", "-n", "kube-system", authReaderName, "-o", "name")
	assert.Equal(t, "rolebinding.rbac.authorization.k8s.io/"+authReaderName, strings.TrimSpace(out))

	// No Pods here, so the APIService is not Available; the reason is what
	// an operator sees while the Deployment is not ready.
	eventually(t, "the APIService has an Available condition", func(ctx context.Context) error {
		out := mustKubectl(t, kc, "", "get", "apiservice", apiServiceName, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}/{.status.conditions[?(@.type=="Available")].reason}`)
		if !strings.HasPrefix(out, "False/") {
			return fmt.Errorf("Available is %q", out)
		}
		t.Logf("without Pods the APIService is %s", out)
		return nil
	})

	apiServiceSpec := func() (skip bool, annotated bool) {
		out := mustKubectl(t, kc, "", "get", "apiservice", apiServiceName, "-o", "json")
		var u unstructured.Unstructured
		require.NoError(t, u.UnmarshalJSON([]byte(out)))
		skip, _, _ = unstructured.NestedBool(u.Object, "spec", "insecureSkipTLSVerify")
		_, annotated = u.GetAnnotations()[injectCAFrom]
		return skip, annotated
	}
	deploymentArgs := func() []string {
		d, err := targetClient.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
		require.NoError(t, err)
		return d.Spec.Template.Spec.Containers[0].Args
	}
	skip, annotated := apiServiceSpec()
	assert.False(t, skip)
	assert.True(t, annotated)
	assert.Equal(t, prodArgs, deploymentArgs())

	// Without cert-manager the CA is set by hand (artifacts/deploy/README.md,
	// "The serving certificate"); applying again
	// keeps it, since the manifest does not name the field.
	caBundle := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	mustKubectl(t, kc, "", "patch", "apiservice", apiServiceName, "--type=merge", "-p", `{"spec":{"caBundle":"`+caBundle+`"}}`)
	r := apply(deployDir)
	require.NoError(t, r.err, r.stderr)
	out = mustKubectl(t, kc, "", "get", "apiservice", apiServiceName, "-o", "jsonpath={.spec.caBundle}")
	assert.Equal(t, caBundle, out, "applying again keeps the caBundle")

	// The dev overlay is refused next to a caBundle; without it, it applies.
	r = apply(deployDevDir)
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "may not be true if caBundle is present")
	mustKubectl(t, kc, "", "patch", "apiservice", apiServiceName, "--type=json", "-p", `[{"op":"remove","path":"/spec/caBundle"}]`)

	// To the dev overlay and back, with the same field manager: server-side
	// apply removes what the other no longer sets.
	r = apply(deployDevDir)
	require.NoError(t, r.err, r.stderr)
	skip, annotated = apiServiceSpec()
	assert.True(t, skip)
	assert.False(t, annotated)
	assert.Equal(t, devArgs, deploymentArgs())
	r = apply(deployDir)
	require.NoError(t, r.err, r.stderr)
	skip, annotated = apiServiceSpec()
	assert.False(t, skip)
	assert.True(t, annotated)
	assert.Equal(t, prodArgs, deploymentArgs())
}

// TestDeployMissingServingCert runs convoy-apiserver with the Deployment's
// arguments where the Secret is not mounted: it must exit at once and name
// the file (the Secret volume is optional, so this is what a Pod shows).
func TestDeployMissingServingCert(t *testing.T) {
	// Not parallel: it runs another convoy-apiserver.
	args := renderedDeployment(t, kustomize(t, filepath.Join(env.root, deployDir))).Spec.Template.Spec.Containers[0].Args
	_, err := os.Stat("/var/run/serving-cert/tls.crt")
	require.True(t, os.IsNotExist(err), "this machine has /var/run/serving-cert/tls.crt")
	// The last --receiver-bind-address wins: a loopback port, not :9443 of
	// this machine.
	args = append(slices.Clone(args), "--secure-port="+strconv.Itoa(closedPort(t)), "--bind-address=127.0.0.1",
		"--receiver-bind-address=127.0.0.1:"+strconv.Itoa(closedPort(t)),
		"--kubeconfig="+filepath.Join(env.cp.Dir(), "convoy.kubeconfig"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, env.convoyBin, args...).CombinedOutput()
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "convoy-apiserver did not exit")
	assert.Contains(t, string(out), "open /var/run/serving-cert/tls.crt: no such file or directory")
}

// TestDeployDevSelfSignedCert runs convoy-apiserver with the dev overlay's
// arguments (plus a local port and kubeconfig): it must serve a self-signed
// certificate it made in memory, writing no file.
func TestDeployDevSelfSignedCert(t *testing.T) {
	// Not parallel: it runs a second convoy-apiserver, with leader election,
	// on the control plane.
	args := renderedDeployment(t, kustomize(t, filepath.Join(env.root, deployDevDir))).Spec.Template.Spec.Containers[0].Args
	port, receiverPort := closedPort(t), closedPort(t)
	kubeconfig := filepath.Join(env.cp.Dir(), "convoy.kubeconfig") // the ServiceAccount's token, as in a Pod
	// The last --receiver-bind-address wins: a loopback port, not :9443 of
	// this machine.
	args = append(slices.Clone(args), "--secure-port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--receiver-bind-address=127.0.0.1:"+strconv.Itoa(receiverPort), "--kubeconfig="+kubeconfig)
	work := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "convoy-apiserver.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command(env.convoyBin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = work, logFile, logFile
	cmd.Env = append(os.Environ(), "HOME="+work, "TMPDIR="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	defer stop()

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the point: nobody can verify it
	}}
	var state *tls.ConnectionState
	eventually(t, "convoy-apiserver ready with the dev arguments", func(ctx context.Context) error {
		resp, err := client.Get("https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/readyz")
		if err != nil {
			return fmt.Errorf("%w; log: %s", err, lastLines(string(readFile(t, logPath)), 3))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
		}
		state = resp.TLS
		return nil
	})
	require.NotNil(t, state)
	leaf := state.PeerCertificates[0]
	assert.Contains(t, leaf.DNSNames, "localhost")
	roots := state.PeerCertificates[len(state.PeerCertificates)-1]
	assert.Equal(t, roots.Subject.String(), roots.Issuer.String(), "the chain ends in a self-signed certificate")

	// The receivers' listener serves HTTPS with the same certificate: a
	// path of no Receiver is 404.
	eventually(t, "the receivers' listener answers with the dev arguments", func(ctx context.Context) error {
		resp, err := client.Post("https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(receiverPort))+"/hook/"+strings.Repeat("0", 64), "application/json", strings.NewReader("{}"))
		if err != nil {
			return fmt.Errorf("%w; log: %s", err, lastLines(string(readFile(t, logPath)), 3))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("POST /hook/...: %s, want 404", resp.Status)
		}
		require.NotEmpty(t, resp.TLS.PeerCertificates)
		assert.Equal(t, leaf.Raw, resp.TLS.PeerCertificates[0].Raw, "the certificate of the aggregated API")
		return nil
	})
	stop()
	log := string(readFile(t, logPath))
	assert.Contains(t, log, "Generated self-signed cert in-memory")
	entries, err := os.ReadDir(work)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written to the working, home or temporary directory")
}

// TestDeployUserRoles applies the real user-roles.yaml and checks the
// ClusterRoles convoy-view and convoy-edit through the API, as users bound to
// them in a namespace, and that the built-in view, edit and admin roles
// select them for aggregation.
func TestDeployUserRoles(t *testing.T) {
	// Not parallel: it applies the cluster-scoped ClusterRoles convoy-view and
	// convoy-edit, which view, edit and admin aggregate.
	ctx := context.Background()
	mustKubectl(t, "", "", "apply", "--server-side", "--force-conflicts", "--field-manager="+deployFieldManager,
		"-f", filepath.Join(env.root, userRolesFile))

	ns := newNamespace(t)
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	newRelease(t, ns, "web")
	bindClusterRole(t, ns, "deploy-viewer", convoyViewRole)
	bindClusterRole(t, ns, "deploy-editor", convoyEditRole)
	viewer, editor := user(t, "deploy-viewer"), user(t, "deploy-editor")

	t.Run(convoyViewRole, func(t *testing.T) {
		canRead(t, viewer, ns)
		assertForbidden(t, kubectl(t, viewer, "{}", "create", "--raw", syncPath(ns, "web"), "-f", "-"), "POST sync")
		assertForbidden(t, kubectl(t, viewer, "", "label", "-n", ns, "releases.convoy.kumodo.io", "web", "team=a"), "patch a Release")
		assertForbidden(t, kubectl(t, viewer, healthRuleSet, "create", "-n", ns, "--dry-run=server", "-f", "-"), "create a HealthRuleSet")
		assertForbidden(t, kubectl(t, viewer, receiverManifest, "create", "-n", ns, "--dry-run=server", "-f", "-"), "create a Receiver")
	})
	t.Run(convoyEditRole, func(t *testing.T) {
		canRead(t, editor, ns)
		canWrite(t, editor, ns, "deploy-editor")
		// Not more: the inventory is the controller's, Clusters are the admins'.
		assertForbidden(t, kubectl(t, editor, releaseInventoryManifest, "create", "-n", ns, "--dry-run=server", "-f", "-"), "create a ReleaseInventory")
		assertForbidden(t, kubectl(t, editor, clusterManifest, "create", "-n", ns, "--dry-run=server", "-f", "-"), "create a Cluster")
	})

	t.Run("aggregation into view, edit and admin", func(t *testing.T) {
		rbac := kubeClient(t).RbacV1()
		get := func(name string) *rbacv1.ClusterRole {
			r, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			return r
		}
		selects := func(aggregate *rbacv1.ClusterRole, role *rbacv1.ClusterRole) bool {
			require.NotNil(t, aggregate.AggregationRule, aggregate.Name)
			for _, s := range aggregate.AggregationRule.ClusterRoleSelectors {
				sel, err := metav1.LabelSelectorAsSelector(&s)
				require.NoError(t, err)
				if sel.Matches(labels.Set(role.Labels)) {
					return true
				}
			}
			return false
		}
		view, edit, admin := get("view"), get("edit"), get("admin")
		convoyView, convoyEdit := get(convoyViewRole), get(convoyEditRole)
		assert.True(t, selects(view, convoyView), "view aggregates convoy-view")
		assert.True(t, selects(edit, view), "edit aggregates view (and with it convoy-view)")
		assert.True(t, selects(edit, convoyEdit), "edit aggregates convoy-edit")
		assert.True(t, selects(admin, edit), "admin aggregates edit")
		assert.True(t, selects(admin, convoyEdit), "admin aggregates convoy-edit")
		assert.False(t, selects(view, convoyEdit), "view does not get sync or writes")

		// The copying is done by the clusterrole-aggregation controller of
		// the control plane's kube-controller-manager.
		eventually(t, "the aggregated rules in view, edit and admin", func(ctx context.Context) error {
			for _, name := range []string{"view", "edit", "admin"} {
				r, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !hasRule(r.Rules, "subresources.convoy.kumodo.io", "releases/health", "get") {
					return fmt.Errorf("%s has no get on releases/health yet", name)
				}
				if name != "view" && !hasRule(r.Rules, "subresources.convoy.kumodo.io", "releases/sync", "create") {
					return fmt.Errorf("%s has no create on releases/sync yet", name)
				}
				if name != "view" && !hasRule(r.Rules, "subresources.convoy.kumodo.io", "releases/refresh", "create") {
					return fmt.Errorf("%s has no create on releases/refresh yet", name)
				}
			}
			return nil
		})
		assert.False(t, hasRule(get("view").Rules, "subresources.convoy.kumodo.io", "releases/sync", "create"), "view cannot request syncs")
		assert.False(t, hasRule(get("view").Rules, "subresources.convoy.kumodo.io", "releases/refresh", "create"), "view cannot request refreshes")

		bindClusterRole(t, ns, "deploy-view-builtin", "view")
		bindClusterRole(t, ns, "deploy-edit-builtin", "edit")
		viewBuiltin, editBuiltin := user(t, "deploy-view-builtin"), user(t, "deploy-edit-builtin")
		canRead(t, viewBuiltin, ns)
		assertForbidden(t, kubectl(t, viewBuiltin, "{}", "create", "--raw", syncPath(ns, "web"), "-f", "-"), "POST sync as view")
		canRead(t, editBuiltin, ns)
		canWrite(t, editBuiltin, ns, "deploy-edit-builtin")
	})
}

const healthRuleSet = `apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata:
  name: e2e-rules
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "true"
`

const releaseInventoryManifest = `apiVersion: convoy.kumodo.io/v1alpha1
kind: ReleaseInventory
metadata:
  name: e2e-inventory
`

const receiverManifest = `apiVersion: convoy.kumodo.io/v1alpha1
kind: Receiver
metadata:
  name: e2e-receiver
spec:
  type: github
  secretRef:
    name: e2e-receiver-token
  releases: {}
`

const clusterManifest = `apiVersion: convoy.kumodo.io/v1alpha1
kind: Cluster
metadata:
  name: e2e-cluster
spec:
  kubeConfig:
    secretRef:
      name: e2e-cluster-kubeconfig
`

// canRead checks GET health, diff and preview of the Release web and a list
// of Releases, as the user of kubeconfig.
func canRead(t *testing.T, kubeconfig, ns string) {
	t.Helper()
	out := mustKubectl(t, kubeconfig, "", "get", "--raw", healthPath(ns, "web"))
	var h subresourcesv1alpha1.ReleaseHealth
	require.NoError(t, json.Unmarshal([]byte(out), &h), out)
	assert.Equal(t, "ReleaseHealth", h.Kind)
	mustKubectl(t, kubeconfig, "", "get", "--raw", diffPath(ns, "web"))
	mustKubectl(t, kubeconfig, "", "get", "--raw", previewPath(ns, "web"))
	out = mustKubectl(t, kubeconfig, "", "get", "-n", ns, "releases.convoy.kumodo.io", "-o", "name")
	assert.Contains(t, out, "release.convoy.kumodo.io/web")
	mustKubectl(t, kubeconfig, "", "get", "-n", ns, "receivers.convoy.kumodo.io")
}

// canWrite checks POST sync, a patch of the Release and the creation of a
// HealthRuleSet and of a Receiver (a dry run: authorization is checked all the same).
func canWrite(t *testing.T, kubeconfig, ns, userName string) {
	t.Helper()
	out := mustKubectl(t, kubeconfig, "{}", "create", "--raw", syncPath(ns, "web"), "-f", "-")
	var s subresourcesv1alpha1.ReleaseSync
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	assert.Equal(t, userName, s.RequestedBy)
	mustKubectl(t, kubeconfig, "", "label", "--overwrite", "-n", ns, "releases.convoy.kumodo.io", "web", "edited-by="+userName)
	mustKubectl(t, kubeconfig, healthRuleSet, "create", "-n", ns, "--dry-run=server", "-f", "-")
	mustKubectl(t, kubeconfig, receiverManifest, "create", "-n", ns, "--dry-run=server", "-f", "-")
}

func assertForbidden(t *testing.T, r kubectlResult, what string) {
	t.Helper()
	if assert.Error(t, r.err, "%s is allowed: %s", what, r.stdout) {
		assert.Contains(t, r.stderr, "Forbidden", what)
	}
}

func hasRule(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// bindClusterRole binds the user to a ClusterRole in namespace.
func bindClusterRole(t *testing.T, namespace, userName, clusterRole string) {
	t.Helper()
	_, err := kubeClient(t).RbacV1().RoleBindings(namespace).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + userName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: userName}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
