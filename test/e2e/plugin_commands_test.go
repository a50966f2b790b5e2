//go:build unix

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// release wait's exit codes, health --exit-code, and wait ending early on
// Degraded.
func TestPluginWait(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))

	r := kubectlConvoy(t, "", "release", "wait", "web", "-n", ns, "--for=insync", "--timeout=0")
	assert.Equal(t, 1, r.code, r)
	r = kubectlConvoy(t, "", "release", "wait", "web", "-n", ns, "--for=insync", "--timeout=3s")
	assert.Equal(t, 1, r.code, r)
	assert.Contains(t, r.stderr, fmt.Sprintf("timed out after 3s waiting for release %s/web to be insync: InSync", ns))

	applied := newStandIn(t).apply(ns, "web")
	r = kubectlConvoy(t, "", "release", "wait", "web", "-n", ns, "--for=insync", "--timeout=2m")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "release.convoy.kumodo.io/web insync\n", r.stdout)

	// No Node for the namespace: the Deployment's Pods stay Pending.
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")
	r = kubectlConvoy(t, "", "release", "wait", "web", "-n", ns, "--for=healthy", "--timeout=2s")
	assert.Equal(t, 1, r.code, r)
	assert.Contains(t, r.stderr, "Healthy is False (Progressing)")
	r = kubectlConvoy(t, "", "release", "health", "web", "-n", ns, "--exit-code")
	assert.Equal(t, 1, r.code, r)

	makeDeploymentAvailable(t, ns, "web")
	for _, what := range []string{"healthy", "synced"} {
		r = kubectlConvoy(t, "", "release", "wait", "web", "-n", ns, "--for="+what, "--timeout=2m")
		require.Equal(t, 0, r.code, r)
	}
	r = kubectlConvoy(t, "", "release", "health", "web", "-n", ns, "--exit-code")
	assert.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, applied.Ref)
	r = kubectlConvoy(t, "", "release", "wait", "web", "-n", ns, "--for=healthy", "--timeout=0")
	assert.Equal(t, 0, r.code, "--timeout=0 checks once: %s", r)

	// Errors: exit 2.
	for _, args := range [][]string{
		{"release", "wait", "nosuch", "-n", ns, "--for=insync"},
		{"release", "wait", "web", "-n", ns},
		{"release", "wait", "web", "-n", ns, "--for=ready"},
		{"release", "health", "nosuch", "-n", ns, "--exit-code"},
	} {
		r = kubectlConvoy(t, "", args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r)
	}

	// Degraded ends the wait at once, with 1.
	bad := newNamespace(t)
	newDriftRelease(t, bad, "web", webManifests("blue", "1.0"), assessed(5*time.Second))
	newStandIn(t).apply(bad, "web")
	waitHealthy(t, bad, "web", metav1.ConditionFalse, "Degraded")
	began := time.Now()
	r = kubectlConvoy(t, "", "release", "wait", "web", "-n", bad, "--for=synced", "--timeout=10m")
	assert.Equal(t, 1, r.code, r)
	assert.Contains(t, r.stderr, fmt.Sprintf("release %s/web is Degraded", bad))
	assert.Less(t, time.Since(began), 5*time.Minute, "the wait ended on Degraded, not at its timeout")
}

func TestPluginList(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	newDriftRelease(t, ns, "api", webManifests("green", "1.0"))
	applied := newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	waitInSync(t, ns, "api", metav1.ConditionFalse, "Drifted")
	mustKubectl(t, "", "", "label", "releases", "web", "-n", ns, "team=web")

	r := kubectlConvoy(t, "", "release", "list", "-n", ns)
	require.Equal(t, 0, r.code, r)
	header, row := table(t, r.stdout, "web")
	assert.Equal(t, []string{"NAME", "INSYNC", "HEALTHY", "RENDER", "AGE"}, header)
	assert.Equal(t, []string{"web", "True", "True", applied.Ref}, row[:4])
	_, row = table(t, r.stdout, "api")
	assert.Equal(t, []string{"api", "False", "True", "-"}, row[:4])

	r = kubectlConvoy(t, "", "release", "list", "-A", "-l", "team=web", "-o", "wide")
	require.Equal(t, 0, r.code, r)
	header, row = table(t, r.stdout, ns)
	assert.Equal(t, []string{"NAMESPACE", "NAME", "INSYNC", "HEALTHY", "RENDER", "AGE", "SYNC-REASON", "HEALTH-REASON", "REVISION", "MESSAGE"}, header)
	assert.Equal(t, []string{ns, "web", "True", "True", applied.Ref}, row[:5])
	assert.NotContains(t, r.stdout, " api ")

	r = kubectlConvoy(t, "", "release", "list", "-n", ns, "-o", "wide")
	require.Equal(t, 0, r.code, r)
	assert.Regexp(t, `(?m)^api\s+False\s+True\s+-\s+\S+\s+Drifted\s+NotConfigured\s+-\s+render \S+ \(Fresh\): `, r.stdout)

	r = kubectlConvoy(t, "", "release", "list", "-n", ns, "-o", "name")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "release.convoy.kumodo.io/api\nrelease.convoy.kumodo.io/web\n", r.stdout)
	r = kubectlConvoy(t, "", "release", "list", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "api web", r.stdout)

	r = kubectlConvoy(t, "", "release", "list", "-n", newNamespace(t))
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stderr, "No releases found in namespace")

	// -w prints the rows of a Release created later.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.binDir, "kubectl"), "convoy", "release", "list", "-n", ns, "-w")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.cp.AdminKubeconfig(),
		"PATH="+buildPlugin(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	seen := func(row string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "list -w ended before a row %q", row)
				if regexp.MustCompile(row).MatchString(l) {
					return
				}
			case <-ctx.Done():
				require.Fail(t, "no row "+row)
			}
		}
	}
	seen(`^web\s`)
	newDriftRelease(t, ns, "late", webManifests("red", "1.0"))
	seen(`^late\s`)
	seen(`^late\s+False\s`) // the observer's first pass, as a new row
}

func TestPluginGet(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0), automatic)
	applied := newStandIn(t).apply(ns, "web")
	makeDeploymentAvailable(t, ns, "web")
	waitHealthy(t, ns, "web", metav1.ConditionTrue, "Healthy")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=3")

	r := kubectlConvoy(t, "", "release", "get", "web", "-n", ns)
	require.Equal(t, 0, r.code, r)
	for _, re := range []string{
		`(?m)^Name:\s+web$`,
		`(?m)^Source:\s+ConfigMap web-manifests$`,
		`(?m)^Sync policy:\s+automatic, checked every `,
		`(?m)^Last applied:\s+` + applied.Ref + `, `,
		`(?m)^CONDITION\s+STATUS\s+REASON\s+SINCE\s+MESSAGE$`,
		`(?m)^Healthy\s+True\s+Healthy\s+`,
		`(?m)^KIND\s+NAMESPACE\s+NAME\s+SYNC\s+HEALTH\s+CHANGED-BY\s+MESSAGE$`,
		`(?m)^Deployment\.apps\s+` + ns + `\s+web\s+Modified\s+Healthy\s+kubectl \(scale\)\s+changed: spec\.replicas$`,
		`(?m)^ConfigMap\s+` + ns + `\s+settings\s+InSync\s+Healthy\s+-\s+no health rule applies$`,
	} {
		assert.Regexp(t, re, r.stdout)
	}

	r = kubectlConvoy(t, "", "release", "get", "web", "-n", ns, "-o", "yaml")
	require.Equal(t, 0, r.code, r)
	var list unstructured.UnstructuredList
	unmarshal(t, r.stdout, &list.Object)
	items, _, _ := unstructured.NestedSlice(list.Object, "items")
	var kinds []string
	for _, it := range items {
		kinds = append(kinds, it.(map[string]any)["kind"].(string))
	}
	assert.Equal(t, []string{"Release", "ReleaseDiff", "ReleaseHealth"}, kinds)

	// Who may read the Release but not the subresources sees that said.
	grant(t, ns, "lee", rbacPolicy("convoy.kumodo.io", "releases", "get"))
	r = kubectlConvoy(t, user(t, "lee"), "release", "get", "web", "-n", ns)
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "Could not read the diff: ")
	assert.Contains(t, r.stdout, "Could not read the health: ")
}
