//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// serviceAccount creates the ServiceAccount name in namespace, bound to a Role
// with rules in that namespace, as a tenant sets up the identity of its
// Releases.
func serviceAccount(t *testing.T, namespace, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	c := kubeClient(t)
	// kube-controller-manager creates "default" in every namespace.
	_, err := c.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = c.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// deployerRules are what a Release of the tests needs in its namespace: read
// its inputs and render store, read and apply its objects.
var deployerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
}

func actingAs(serviceAccount string) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.ServiceAccountName = serviceAccount }
}

// secretValue is a value of an object that a Release's identity may not read.
func secretValue() string { return "kube-system-only-" + rand.String(12) }

// assertNowhere checks that value is in none of the places a Release's result
// reaches: /diff, /preview, /health, the Release, its inventory, the Events of
// its namespace and convoy-apiserver's log.
func assertNowhere(t *testing.T, namespace, name, value string) {
	t.Helper()
	places := map[string]string{
		"/diff":   kubectl(t, "", "", "get", "--raw", diffPath(namespace, name)).stdout,
		"/health": kubectl(t, "", "", "get", "--raw", healthPath(namespace, name)).stdout,
		"the Release and its inventory": mustKubectl(t, "", "", "get", "release,releaseinventory", "-n", namespace,
			"-o", "json", "--ignore-not-found"),
		"Events": mustKubectl(t, "", "", "get", "events.events.k8s.io", "-n", namespace, "-o", "json"),
		"/metrics": func() string {
			_, body := replicaGet(t, env.cp.ConvoyAPIServer(), "/metrics")
			return body
		}(),
		"the server's log": string(readFile(t, env.cp.ConvoyAPIServer().LogFile())),
	}
	preview := kubectl(t, "", "", "get", "--raw", previewPath(namespace, name))
	places["/preview"] = preview.stdout + preview.stderr
	for where, text := range places {
		assert.NotContains(t, text, value, "the value appears in %s", where)
	}
}

// A Release acts as its ServiceAccount: what the ServiceAccount may read and
// dry-run is compared; an object it may not read is Undetermined (Forbidden)
// and its value shows nowhere; without serviceAccountName, the Release acts
// as the namespace's default ServiceAccount, not as convoy-apiserver.
func TestTenancyReleaseActsAsItsServiceAccount(t *testing.T) {
	t.Parallel()
	ns := newBareNamespace(t)
	serviceAccount(t, ns, "deployer", deployerRules...)
	standIn := newStandIn(t)

	// Within its rights: compared as usual.
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), actingAs("deployer"))
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// The confused deputy of the issue: a ConfigMap of kube-system in the
	// render. The observer used to read it as itself and show its value.
	value := secretValue()
	ctx := context.Background()
	_, err := kubeClient(t).CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "peek-" + ns},
		Data:       map[string]string{"token": value},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = kubeClient(t).CoreV1().ConfigMaps("kube-system").Delete(ctx, "peek-"+ns, metav1.DeleteOptions{})
	})
	newDriftRelease(t, ns, "peek", map[string]string{"peek.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: peek-%s, namespace: kube-system}\ndata: {token: mine}\n", ns)},
		actingAs("deployer"))
	assertUndetermined(t, ns, "peek", "Forbidden",
		"ConfigMap kube-system/peek-"+ns, "ServiceAccount "+ns+"/deployer may not get it",
		`"system:serviceaccount:`+ns+`:deployer" cannot get resource "configmaps"`)
	assertNowhere(t, ns, "peek", value)
	// It never stalls the others: the first Release is still checked.
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// No serviceAccountName: the default ServiceAccount of the namespace,
	// which may read nothing here yet.
	newDriftRelease(t, ns, "plain", webManifests("green", "1.0"))
	assertUndetermined(t, ns, "plain", "Forbidden", "ServiceAccount "+ns+"/default may not read an input of the release",
		"source ConfigMap "+ns+"/plain-manifests may not be read", `"system:serviceaccount:`+ns+`:default" cannot get resource "configmaps"`)
	r := kubectl(t, "", "", "get", "--raw", previewPath(ns, "plain"))
	require.Error(t, r.err, "the render cannot be read as the default ServiceAccount")
	assert.Contains(t, r.stderr, "IdentityForbidden")
	assert.Contains(t, r.stderr, "system:serviceaccount:"+ns+":default")

	// Once the tenant grants the default ServiceAccount its rights, the same
	// Release is compared as it.
	serviceAccount(t, ns, "default", deployerRules...)
	standIn.apply(ns, "plain")
	waitInSync(t, ns, "plain", metav1.ConditionTrue, "InSync")
}

// The health loop reads inventory entries as the Release's ServiceAccount:
// an entry it may not read is Unknown with a message that names the
// ServiceAccount and the verb, and a rule that would print a field of it
// prints nothing.
func TestTenancyHealthReadsAsTheServiceAccount(t *testing.T) {
	t.Parallel()
	ns := newBareNamespace(t)
	serviceAccount(t, ns, "deployer", deployerRules...)
	value := secretValue()
	files := map[string]string{
		"mine.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\ndata: {token: readable}\n",
		"theirs.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs-%s, namespace: kube-system}\ndata: {token: desired}\n", ns),
	}
	newDriftRelease(t, ns, "web", files, actingAs("deployer"), func(r *convoyv1alpha1.Release) {
		r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{}}
	})
	mustKubectl(t, "", `apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata: {name: print-the-token, namespace: `+ns+`}
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "false"
    messageExpression: "'the token is ' + object.data.token"
`, "apply", "-f", "-")
	// The stand-in applies as the admin, so the kube-system object exists.
	newStandIn(t).apply(ns, "web")
	t.Cleanup(func() {
		_ = kubeClient(t).CoreV1().ConfigMaps("kube-system").Delete(context.Background(), "theirs-"+ns, metav1.DeleteOptions{})
	})
	// Someone with the right to changes it to a value the ServiceAccount may
	// not see.
	mustKubectl(t, "", "", "patch", "configmap", "theirs-"+ns, "-n", "kube-system", "--type=merge", "-p", `{"data":{"token":"`+value+`"}}`)

	waitHealthy(t, ns, "web", metav1.ConditionUnknown, "Unknown")
	mine := entryStatus(t, ns, "web", "ConfigMap", "mine")
	assert.Equal(t, convoyv1alpha1.HealthProgressing, mine.State)
	assert.Equal(t, "the token is readable", mine.Message, "the rule prints fields of what the ServiceAccount may read")
	theirs := entryStatus(t, ns, "web", "ConfigMap", "theirs-"+ns)
	assert.Equal(t, convoyv1alpha1.HealthUnknown, theirs.State)
	assert.Contains(t, theirs.Message, "ServiceAccount "+ns+"/deployer may not get ConfigMap kube-system/theirs-"+ns)
	assert.Contains(t, theirs.Message, `cannot get resource "configmaps"`)
	assertNowhere(t, ns, "web", value)
}

// A kubeconfig in a Cluster's Secret may hold inline data only: one that
// reads a local file or runs a program is refused before any connection, and
// what it names is never read or run.
func TestTenancyKubeconfigsThatReadFilesOrRunProgramsAreRefused(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	listener := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(listener.Close)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	token := "server-own-token-" + rand.String(12)
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	marker := filepath.Join(dir, "exec-ran")

	kubeconfigs := map[string]struct {
		kubeconfig string
		field      string
	}{
		// The exploit of the issue: no context, and unnamed entries that
		// client-go fell back to.
		"unnamed": {field: "current-context", kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: ""
clusters:
- name: ""
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: ""
  user: {tokenFile: %q}
`, listener.URL, tokenFile)},
		"token-file": {field: "tokenFile", kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users:
- name: u
  user: {token: inline}
- name: unused
  user: {tokenFile: %q}
`, listener.URL, tokenFile)},
		"exec-plugin": {field: "exec", kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "touch %s"]
      interactiveMode: Never
`, listener.URL, marker)},
		"proxy-url": {field: "proxy-url", kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true, proxy-url: %q}}]
users: [{name: u, user: {token: inline}}]
`, listener.URL, listener.URL)},
	}
	ns := newNamespace(t)
	for name, tc := range kubeconfigs {
		registerCluster(t, ns, name, []byte(tc.kubeconfig))
		newDriftRelease(t, ns, name, webManifests("blue", "1.0"), onCluster(name))
	}
	for name, tc := range kubeconfigs {
		assertUndetermined(t, ns, name, "ClusterConfigInvalid", "Cluster.convoy.kumodo.io "+ns+"/"+name, tc.field)
	}
	assert.Zero(t, requests.Load(), "the listener named by the kubeconfigs received a request")
	assert.NoFileExists(t, marker, "the exec credential plugin ran")
	assertNowhere(t, ns, "unnamed", token)
}

// The shipped RBAC of convoy-apiserver grants no wildcard and no
// cluster-wide read of ConfigMaps or Secrets; it impersonates ServiceAccounts.
// Impersonation is as narrow as the tenants: the shipped RBAC binds the
// impersonation of ServiceAccounts in no namespace. A Release in a namespace
// that did not grant it is Undetermined with what to bind; the cluster-wide
// binding (artifacts/deploy/cluster-wide-impersonation.yaml) lets
// convoy-apiserver act in every namespace; the RoleBinding the message names
// lets it act in that namespace only.
func TestTenancyImpersonationIsGrantedPerNamespace(t *testing.T) {
	// Not parallel: it applies a ClusterRoleBinding that lets convoy-apiserver
	// act in every namespace.
	ns := newNamespaceNotGranted(t)
	grantServiceAccounts(t, ns, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	command := "kubectl create rolebinding convoy-apiserver:impersonate --namespace " + ns +
		" --clusterrole convoy-apiserver:impersonate --serviceaccount convoy-system:convoy-apiserver"
	assertUndetermined(t, ns, "web", cluster.ReasonImpersonationNotGranted,
		"convoy-apiserver may not act as ServiceAccount "+ns+"/default", command)
	r := kubectl(t, "", "", "get", "--raw", previewPath(ns, "web"))
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "ImpersonationNotGranted")
	assert.Contains(t, r.stderr, command)

	// Cluster-wide: every namespace.
	wide := filepath.Join(env.root, "artifacts/deploy/cluster-wide-impersonation.yaml")
	mustKubectl(t, "", "", "apply", "--server-side", "-f", wide)
	eventually(t, "the cluster-wide binding lets convoy-apiserver act in "+ns, func(context.Context) error {
		if d := getDiff(t, ns, "web", ""); d.Result != subresourcesv1alpha1.DiffDrifted {
			return fmt.Errorf("/diff: %s %s: %s", d.Result, d.Reason, d.Message)
		}
		return nil
	})
	mustKubectl(t, "", "", "delete", "-f", wide)
	eventually(t, "without the binding, refused again", func(context.Context) error {
		if d := getDiff(t, ns, "web", ""); d.Reason != cluster.ReasonImpersonationNotGranted {
			return fmt.Errorf("/diff: %s %s: %s", d.Result, d.Reason, d.Message)
		}
		return nil
	})

	// Per namespace: the command of the message, run as the admin.
	args := strings.Fields(strings.TrimPrefix(command, "kubectl "))
	mustKubectl(t, "", "", args...)
	eventually(t, "the RoleBinding lets convoy-apiserver act in "+ns, func(context.Context) error {
		if d := getDiff(t, ns, "web", ""); d.Result != subresourcesv1alpha1.DiffDrifted {
			return fmt.Errorf("/diff: %s %s: %s", d.Result, d.Reason, d.Message)
		}
		return nil
	})
	// and in no other namespace that did not grant it.
	other := newNamespaceNotGranted(t)
	grantServiceAccounts(t, other, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	newDriftRelease(t, other, "web", webManifests("blue", "1.0"))
	assertUndetermined(t, other, "web", cluster.ReasonImpersonationNotGranted, "ServiceAccount "+other+"/default")
}

func TestTenancyShippedRBACIsLeastPrivilege(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"artifacts/rbac/convoy-apiserver.yaml", "artifacts/deploy/base/copies/rbac/convoy-apiserver.yaml"} {
		f, err := os.Open(filepath.Join(env.root, path))
		require.NoError(t, err)
		objs := decodeObjects(t, f, path)
		f.Close()
		impersonates := false
		for _, obj := range objs {
			if kind := obj.GetKind(); kind == "ClusterRoleBinding" || kind == "RoleBinding" {
				var binding rbacv1.RoleBinding
				typed(t, obj, &binding)
				assert.NotEqual(t, cluster.ImpersonationClusterRole, binding.RoleRef.Name,
					"%s: %s %s binds the impersonation of ServiceAccounts: the recommended install leaves it to each namespace", path, kind, obj.GetName())
			}
			if obj.GetKind() != "ClusterRole" && obj.GetKind() != "Role" {
				continue
			}
			var role rbacv1.ClusterRole
			typed(t, obj, &role)
			for _, rule := range role.Rules {
				for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
					assert.NotContains(t, field, "*", "%s %s %s: %+v", path, obj.GetKind(), obj.GetName(), rule)
				}
				if obj.GetKind() == "ClusterRole" && slicesContain(rule.APIGroups, "") {
					for _, res := range []string{"configmaps", "secrets"} {
						assert.False(t, slicesContain(rule.Resources, res) && (slicesContain(rule.Verbs, "get") || slicesContain(rule.Verbs, "list")),
							"%s: ClusterRole %s reads %s cluster-wide", path, obj.GetName(), res)
					}
				}
				impersonates = impersonates || hasRule([]rbacv1.PolicyRule{rule}, "", "serviceaccounts", "impersonate")
			}
		}
		assert.True(t, impersonates, "%s: convoy-apiserver impersonates ServiceAccounts", path)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
