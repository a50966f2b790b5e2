//go:build unix

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
)

const subresourcesAPI = "/apis/subresources.convoy.kumodo.io/v1alpha1"

func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(env.cp.AdminConfig())
	require.NoError(t, err)
	return c
}

func convoyClient(t *testing.T) convoyclient.Interface {
	t.Helper()
	c, err := convoyclient.NewForConfig(env.cp.AdminConfig())
	require.NoError(t, err)
	return c
}

var nsCounter atomic.Int32

// A test that works only in namespaces of its own (newNamespace and the
// like), with the helpers here, calls t.Parallel(); one that does not says
// why in its first line. Go runs the parallel tests after all the others,
// so a test that is not parallel runs alone.

// newNamespace creates a namespace of its own for a test, whose
// ServiceAccounts, the identities its Releases act as, may do everything in
// it (a Role bound to the group system:serviceaccounts:NS), as a tenant
// would grant them. It is not deleted afterwards: the control plane goes
// away with the run.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := newBareNamespace(t)
	grantServiceAccounts(t, name, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	return name
}

// grantServiceAccounts binds every ServiceAccount of namespace to a Role
// with rules in it.
func grantServiceAccounts(t *testing.T, namespace string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	c := kubeClient(t)
	const name = "e2e-release-identities"
	_, err := c.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + namespace}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// newBareNamespace creates a namespace where ServiceAccounts have no right,
// and that lets convoy-apiserver act as them, as a tenant namespace opts in
// (the RoleBinding of the recommended install).
func newBareNamespace(t *testing.T) string {
	t.Helper()
	name := newNamespaceNotGranted(t)
	require.NoError(t, env.cp.AllowImpersonation(context.Background(), name))
	return name
}

// newNamespaceNotGranted creates a namespace where ServiceAccounts have no
// right and that has not let convoy-apiserver act as them.
func newNamespaceNotGranted(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("e2e-%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), nsCounter.Add(1))
	if len(name) > 63 {
		name = fmt.Sprintf("e2e-%d-%d", time.Now().UnixNano()%1e9, nsCounter.Add(1))
	}
	_, err := kubeClient(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		// Its Pods stay Pending until startNode gives it a Node.
		Annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": namespaceNodeLabel + "=" + name},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}

// namespaceNodeLabel keeps the Pods of a test namespace on the Nodes of
// that namespace, so that each test decides when its workloads run.
const namespaceNodeLabel = "e2e.convoy.kumodo.io/namespace"

// startNode adds a Node, simulated by kwok, where the Pods of namespace run
// and become Ready.
func startNode(t *testing.T, namespace string) {
	t.Helper()
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	require.NoError(t, env.cp.AddNode(context.Background(), fmt.Sprintf("kwok-%08x", h.Sum32()), map[string]string{namespaceNodeLabel: namespace}))
}

// kubectlResult is what a kubectl run printed.
type kubectlResult struct {
	stdout, stderr string
	err            error
}

// kubectl runs the control plane's kubectl as the user of kubeconfig
// (empty: the admin), with stdin.
func kubectl(t *testing.T, kubeconfig, stdin string, args ...string) kubectlResult {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = env.cp.AdminKubeconfig()
	}
	cmd := exec.Command(filepath.Join(env.binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+filepath.Join(t.TempDir(), "cache"))
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	return kubectlResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

// mustKubectl is kubectl that fails the test when kubectl fails.
func mustKubectl(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	r := kubectl(t, kubeconfig, stdin, args...)
	require.NoError(t, r.err, "kubectl %s: %s", strings.Join(args, " "), r.stderr)
	return r.stdout
}

// userKubeconfigs guards the kubeconfig files the control plane writes for
// users, one per name: tests that run at once may name the same user, and a
// file written while another test's kubectl reads it is read half-written.
var userKubeconfigs sync.Mutex

// user returns the kubeconfig of a user with no rights beyond RBAC, in a
// file of the test's own.
func user(t *testing.T, name string) string {
	t.Helper()
	userKubeconfigs.Lock()
	defer userKubeconfigs.Unlock()
	shared, _, err := env.cp.UserKubeconfig(name)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), filepath.Base(shared))
	require.NoError(t, os.WriteFile(path, readFile(t, shared), 0o600))
	return path
}

// grant binds user to a Role with rules in namespace.
func grant(t *testing.T, namespace, userName string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	c := kubeClient(t)
	name := "e2e-" + userName
	_, err := c.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      rules,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: userName}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// subresourceRule allows verbs on releases/<subresource> of the aggregated group.
func subresourceRule(subresource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{
		APIGroups: []string{"subresources.convoy.kumodo.io"},
		Resources: []string{"releases/" + subresource},
		Verbs:     verbs,
	}
}

// rbacPolicy allows verbs on a resource of a group.
func rbacPolicy(group, resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
}

// newRelease creates a Release that renders the ConfigMap name+"-manifests".
func newRelease(t *testing.T, namespace, name string) *convoyv1alpha1.Release {
	t.Helper()
	r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Create(context.Background(), &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: convoyv1alpha1.ReleaseSpec{
			Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: name + "-manifests"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r
}

// eventually polls cond every 200ms for up to a minute and fails the test
// with cond's last error.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	eventuallyWithin(t, time.Minute, what, cond)
}

// eventuallyWithin is eventually with a deadline of its own, for what takes
// longer than a minute by design (a backoff's schedule).
func eventuallyWithin(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			last = cond(ctx)
			return last == nil, nil
		})
	require.NoError(t, err, "%s: %v", what, last)
}

// The messages of the lines convoy-apiserver logs at -v=2 for each pass of a
// loop over a Release (pkg/observer).
const (
	driftPass  = "Drift pass"
	healthPass = "Health pass"
)

// passCounter counts the passes of one loop over one Release that the
// replica the APIService points at (the one that runs the loops) logged
// since the counter was made. A test that waits and then asserts that
// nothing changed also asserts, with it, that the loop looked at that
// Release meanwhile: a loop that stalled would pass it otherwise. It counts
// the lines of that Release, not a metric that the other tests' Releases
// move too.
type passCounter struct {
	path     string
	offset   int64
	message  string // "Drift pass", with the quotes klog writes
	release  string // release="ns/name"
	location string // for messages: the loop, the Release
	made     time.Time
}

// countPasses starts counting the passes of loop (driftPass, healthPass)
// over the Release namespace/name.
func countPasses(t *testing.T, loop, namespace, name string) *passCounter {
	t.Helper()
	return countPassesOn(t, env.cp.ConvoyAPIServer(), loop, namespace, name)
}

// countPassesOn counts the passes the replica p logs, as countPasses.
func countPassesOn(t *testing.T, p *controlplane.ConvoyProcess, loop, namespace, name string) *passCounter {
	t.Helper()
	path := p.LogFile()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return &passCounter{
		path: path, offset: info.Size(),
		message: `"` + loop + `"`, release: ` release="` + namespace + "/" + name + `"`,
		location: fmt.Sprintf("%q of %s/%s in %s", loop, namespace, name, path),
		made:     time.Now(),
	}
}

// since returns the passes logged since the counter was made, in the lines
// written whole.
func (c *passCounter) since(t *testing.T) int {
	t.Helper()
	f, err := os.Open(c.path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Seek(c.offset, io.SeekStart)
	require.NoError(t, err)
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.HasSuffix(line, "\n") && strings.Contains(line, c.message) && strings.Contains(line, c.release) {
			n++
		}
	}
	return n
}

// requireAtLeast fails the test unless the loop logged at least n passes of
// the Release since the counter was made.
func (c *passCounter) requireAtLeast(t *testing.T, n int) {
	t.Helper()
	got := c.since(t)
	require.GreaterOrEqual(t, got, n, "passes %s meanwhile: the loop did not look, so what did not change says nothing", c.location)
}

// waitAtLeast waits until d passed since the counter was made and the loop
// logged at least n passes of the Release meanwhile: what a fixed sleep of d
// expects of an idle server, kept however slow the passes of a loaded one
// are (the parallel tests share it). What the test then asserts held for
// at least d and n passes.
func (c *passCounter) waitAtLeast(t *testing.T, n int, d time.Duration) {
	t.Helper()
	time.Sleep(time.Until(c.made.Add(d)))
	c.waitFor(t, n)
}

// waitFor waits until the loop logged at least n passes of the Release
// since the counter was made.
func (c *passCounter) waitFor(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d passes %s", n, c.location), func(context.Context) error {
		if got := c.since(t); got < n {
			return fmt.Errorf("%d passes", got)
		}
		return nil
	})
}
