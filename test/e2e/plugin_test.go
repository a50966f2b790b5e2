//go:build unix

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error
)

// buildPlugin builds kubectl-convoy once for the package, into a directory
// of the control plane (removed with it), next to its completion script
// kubectl_complete-convoy.
func buildPlugin(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		dir := filepath.Join(env.cp.Dir(), "plugin")
		if pluginErr = os.MkdirAll(dir, 0o755); pluginErr != nil {
			return
		}
		build := exec.Command("go", "build", "-ldflags", stamp(pluginVersion), "-o", filepath.Join(dir, "kubectl-convoy"), "./cmd/kubectl-convoy")
		build.Dir = env.root
		if out, err := build.CombinedOutput(); err != nil {
			pluginErr = fmt.Errorf("building kubectl-convoy: %w\n%s", err, out)
			return
		}
		script, err := os.ReadFile(filepath.Join(env.root, "cmd/kubectl-convoy/kubectl_complete-convoy"))
		if err != nil {
			pluginErr = err
			return
		}
		pluginErr = os.WriteFile(filepath.Join(dir, "kubectl_complete-convoy"), script, 0o755)
		pluginDir = dir
	})
	require.NoError(t, pluginErr)
	return pluginDir
}

// pluginResult is what a run of the plugin printed, and its exit code.
type pluginResult struct {
	stdout, stderr string
	code           int
}

func (r pluginResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// kubectlConvoy runs `kubectl convoy args...` through the real kubectl, with
// the plugin first on PATH, as the user of kubeconfig (empty: the admin).
func kubectlConvoy(t *testing.T, kubeconfig string, args ...string) pluginResult {
	t.Helper()
	return kubectlWithPlugin(t, kubeconfig, append([]string{"convoy"}, args...)...)
}

// kubectlConvoyStdin is kubectlConvoy as the admin, with stdin.
func kubectlConvoyStdin(t *testing.T, stdin string, args ...string) pluginResult {
	t.Helper()
	return kubectlWithPluginStdin(t, "", stdin, append([]string{"convoy"}, args...)...)
}

// kubectlWithPlugin runs kubectl args... with the plugin first on PATH.
func kubectlWithPlugin(t *testing.T, kubeconfig string, args ...string) pluginResult {
	t.Helper()
	return kubectlWithPluginStdin(t, kubeconfig, "", args...)
}

// kubectlWithPluginStdin is kubectlWithPlugin with stdin.
func kubectlWithPluginStdin(t *testing.T, kubeconfig, stdin string, args ...string) pluginResult {
	t.Helper()
	dir := buildPlugin(t)
	if kubeconfig == "" {
		kubeconfig = env.cp.AdminKubeconfig()
	}
	cmd := exec.Command(filepath.Join(env.binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+filepath.Join(t.TempDir(), "cache"),
		"PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := pluginResult{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		require.NoError(t, err)
	}
	return r
}

// unmarshal decodes the JSON or YAML output of -o json|yaml into v.
func unmarshal(t *testing.T, out string, v any) {
	t.Helper()
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), v), out)
}

func TestPluginHealth(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	applied := newStandIn(t).apply(ns, "web")
	waitHealthy(t, ns, "web", metav1.ConditionFalse, "Progressing")

	t.Run("table", func(t *testing.T) {
		r := kubectlConvoy(t, "", "release", "health", "web", "-n", ns)
		require.Equal(t, 0, r.code, r)
		t.Logf("kubectl convoy release health web -n %s\n%s", ns, r.stdout)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		require.Len(t, lines, 4, r)
		assert.Regexp(t, `^KIND\s+NAMESPACE\s+NAME\s+STATE\s+AGE\s+ASSESSED\s+MESSAGE$`, lines[0])
		assert.Regexp(t, fmt.Sprintf(`(?m)^Deployment\.apps\s+%s\s+web\s+Progressing\s+\d+s\s+%s\s+\S.*$`, ns, applied.Ref), r.stdout)
		assert.Regexp(t, fmt.Sprintf(`(?m)^ConfigMap\s+%s\s+settings\s+Healthy\s+-\s+%s\s+no health rule applies$`, ns, applied.Ref), r.stdout)
		assert.True(t, strings.HasPrefix(lines[3], "Healthy: False (Progressing) 1 of 2 healthy: "), lines[3])
		assert.Contains(t, lines[3], "Deployment")
		assert.Empty(t, r.stderr)
	})
	for _, output := range []string{"json", "yaml"} {
		t.Run(output, func(t *testing.T) {
			r := kubectlConvoy(t, "", "release", "health", "web", "-n", ns, "-o", output)
			require.Equal(t, 0, r.code, r)
			var h subresourcesv1alpha1.ReleaseHealth
			unmarshal(t, r.stdout, &h)
			assert.Equal(t, "ReleaseHealth", h.Kind)
			assert.Equal(t, ns, h.Namespace)
			require.NotNil(t, h.Healthy)
			assert.Equal(t, "Progressing", h.Healthy.Reason)
			assert.Equal(t, &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Progressing: 1}, h.HealthSummary)
			require.Len(t, h.Entries, 2)
			for _, e := range h.Entries {
				assert.Equal(t, applied.Ref, e.RenderRef)
				if e.Kind == "Deployment" {
					assert.Equal(t, convoyv1alpha1.HealthProgressing, e.State)
					assert.NotNil(t, e.FirstUnhealthy)
				}
			}
		})
	}
}

func TestPluginDiff(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	applied := newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	t.Run("in sync: exit 0", func(t *testing.T) {
		r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns)
		require.Equal(t, 0, r.code, r)
		assert.Equal(t, fmt.Sprintf("Release %s/web, render %s (Fresh): InSync\n", ns, applied.Ref), strings.SplitAfter(r.stdout, "\n")[0])
		assert.Regexp(t, fmt.Sprintf(`(?m)^InSync\s+Deployment\.apps\s+%s/web$`, ns), r.stdout)
		assert.Regexp(t, fmt.Sprintf(`(?m)^InSync\s+ConfigMap\s+%s/settings$`, ns), r.stdout)
		assert.NotContains(t, r.stdout, "--- live")
		assert.Empty(t, r.stderr)
		for _, output := range []string{"json", "yaml"} {
			r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns, "-o", output)
			require.Equal(t, 0, r.code, r)
			var d subresourcesv1alpha1.ReleaseDiff
			unmarshal(t, r.stdout, &d)
			assert.Equal(t, "ReleaseDiff", d.Kind)
			assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result)
			assert.Len(t, d.Objects, 2)
		}
	})

	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=5")
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")

	t.Run("scaled: exit 1", func(t *testing.T) {
		r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns)
		require.Equal(t, 1, r.code, r)
		t.Logf("kubectl convoy release diff web -n %s\n%s", ns, r.stdout)
		assert.Regexp(t, fmt.Sprintf(`(?m)^Modified\s+Deployment\.apps\s+%s/web$`, ns), r.stdout)
		assert.Regexp(t, fmt.Sprintf(`(?m)^InSync\s+ConfigMap\s+%s/settings$`, ns), r.stdout)
		assert.Contains(t, r.stdout, fmt.Sprintf("\n--- live   apps/v1 Deployment %s/web\n+++ desired\n@@ spec.replicas @@ changed by kubectl (scale), time unknown\n-5\n+2\n", ns))
		assert.NotContains(t, r.stdout, "\x1b[", "no colour when stdout is not a terminal")
		assert.Empty(t, r.stderr)

		r = kubectlConvoy(t, "", "release", "diff", "web", "-n", ns, "--color=always")
		require.Equal(t, 1, r.code, r)
		assert.Contains(t, r.stdout, "\x1b[31m-5\x1b[0m\n\x1b[32m+2\x1b[0m\n")

		for _, output := range []string{"json", "yaml"} {
			r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns, "-o", output)
			require.Equal(t, 1, r.code, r)
			var d subresourcesv1alpha1.ReleaseDiff
			unmarshal(t, r.stdout, &d)
			assert.Equal(t, subresourcesv1alpha1.DiffDrifted, d.Result)
			web := objectDiff(t, d, "Deployment", "web")
			require.Len(t, web.Changes, 1)
			assert.Equal(t, "spec.replicas", web.Changes[0].Path)
		}
	})
}

func TestPluginDiffRender(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	blue := standIn.apply(ns, "web")
	setManifests(t, ns, "web", webManifests("green", "2.0"))
	green := standIn.render(ns, "web")
	standIn.storeRender(ns, "web", green)
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")

	r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns)
	require.Equal(t, 1, r.code, r)
	t.Logf("kubectl convoy release diff web -n %s\n%s", ns, r.stdout)
	// The render changed, not the cluster: only convoy owns these fields.
	assert.Contains(t, r.stdout, "@@ data.color @@ no manager but convoy's owns it: the render changed since it was applied, or an admission webhook or a client that records no managedFields changed it\n-blue\n+green\n")
	assert.Regexp(t, `@@ spec\.template\.spec\.containers\[name=app\]\.image @@ [^\n]*\n-registry\.example/web:1\.0\n\+registry\.example/web:2\.0\n`, r.stdout)

	r = kubectlConvoy(t, "", "release", "diff", "web", "-n", ns, "--render", blue.Ref)
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, fmt.Sprintf("render %s (Stored): InSync", blue.Ref))

	r = kubectlConvoy(t, "", "release", "diff", "web", "-n", ns, "--render", green.Ref, "-o", "json")
	require.Equal(t, 1, r.code, r)
	var d subresourcesv1alpha1.ReleaseDiff
	unmarshal(t, r.stdout, &d)
	assert.Equal(t, green.Ref, d.RenderRef)
	assert.Equal(t, subresourcesv1alpha1.RenderSourceStored, d.RenderSource)

	r = kubectlConvoy(t, "", "release", "diff", "web", "-n", ns, "--render", "00000000deadbeef")
	require.Equal(t, 2, r.code, r)
	assert.Equal(t, fmt.Sprintf("error: render 00000000deadbeef is not in the render store of release %s/web\n", ns), r.stderr)
}

func TestPluginDiffUndetermined(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "far", webManifests("blue", "1.0"), onCluster("nowhere"))
	newRelease(t, ns, "nosource") // its ConfigMap nosource-manifests does not exist
	waitInSync(t, ns, "far", metav1.ConditionUnknown, "Undetermined")

	r := kubectlConvoy(t, "", "release", "diff", "far", "-n", ns)
	require.Equal(t, 2, r.code, r)
	assert.Contains(t, r.stdout, ": Undetermined\n")
	assert.True(t, strings.HasPrefix(r.stderr, fmt.Sprintf("error: the diff of release %s/far is undetermined (ClusterNotFound): ", ns)), r.stderr)
	assert.Contains(t, r.stderr, "nowhere")

	r = kubectlConvoy(t, "", "release", "diff", "nosource", "-n", ns)
	require.Equal(t, 2, r.code, r)
	assert.Contains(t, r.stderr, "undetermined (RenderFailed): SourceNotFound")

	r = kubectlConvoy(t, "", "release", "diff", "nosource", "-n", ns, "-o", "yaml")
	require.Equal(t, 2, r.code, r)
	var d subresourcesv1alpha1.ReleaseDiff
	unmarshal(t, r.stdout, &d)
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, d.Result)
	assert.Equal(t, "RenderFailed", d.Reason)
	assert.Contains(t, r.stderr, "(RenderFailed)")
}

// yamlStream decodes the documents of a multi-document YAML stream, leaving
// out empty ones.
func yamlStream(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err, stream)
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func TestPluginPreview(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	blue := standIn.apply(ns, "web")
	setManifests(t, ns, "web", webManifests("green", "2.0"))
	green := standIn.render(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")

	colorOf := func(objs []*unstructured.Unstructured) string {
		for _, o := range objs {
			if o.GetKind() == "ConfigMap" {
				c, _, _ := unstructured.NestedString(o.Object, "data", "color")
				return c
			}
		}
		return ""
	}
	{
		r := kubectlConvoy(t, "", "release", "preview", "web", "-n", ns, "--manifests")
		require.Equal(t, 0, r.code, r)
		assert.True(t, strings.HasPrefix(r.stdout, fmt.Sprintf("# Release %s/web: 2 objects\n# renderRef: %s\n# renderSource: Fresh\n---\n", ns, green.Ref)), r.stdout)
		objs := yamlStream(t, r.stdout)
		require.Len(t, objs, 2)
		kinds := []string{objs[0].GetKind(), objs[1].GetKind()}
		assert.ElementsMatch(t, []string{"ConfigMap", "Deployment"}, kinds)
		assert.Equal(t, "green", colorOf(objs))
	}

	r := kubectlConvoy(t, "", "release", "preview", "web", "-n", ns, "--render", blue.Ref, "--manifests")
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "# renderRef: "+blue.Ref+"\n# renderSource: Stored\n")
	assert.Equal(t, "blue", colorOf(yamlStream(t, r.stdout)))

	// -o json and -o yaml print the same object.
	var printed []subresourcesv1alpha1.ReleasePreview
	for _, format := range []string{"json", "yaml"} {
		r = kubectlConvoy(t, "", "release", "preview", "web", "-n", ns, "-o", format)
		require.Equal(t, 0, r.code, r)
		var p subresourcesv1alpha1.ReleasePreview
		unmarshal(t, r.stdout, &p)
		assert.Equal(t, "ReleasePreview", p.Kind)
		assert.Equal(t, green.Ref, p.RenderRef)
		assert.Len(t, p.Objects, 2)
		printed = append(printed, p)
	}
	assert.Equal(t, printed[0], printed[1])
	r = kubectlConvoy(t, "", "release", "preview", "web", "-n", ns, "-o", "name")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "releasepreview.subresources.convoy.kumodo.io/web\n", r.stdout)
	r = kubectlConvoy(t, "", "release", "preview", "web", "-n", ns, "-o", "yaml", "--manifests")
	assert.Equal(t, 1, r.code, r)
	assert.Contains(t, r.stderr, "--manifests and -o cannot be used together")

	r = kubectlConvoy(t, "", "release", "preview", "web", "-n", ns)
	require.Equal(t, 0, r.code, r)
	assert.Regexp(t, `^KIND\s+NAMESPACE\s+NAME\n`, r.stdout)
	assert.Regexp(t, fmt.Sprintf(`(?m)^Deployment\.apps\s+%s\s+web$`, ns), r.stdout)
	assert.Regexp(t, fmt.Sprintf(`(?m)^ConfigMap\s+%s\s+settings$`, ns), r.stdout)
	assert.Contains(t, r.stdout, fmt.Sprintf("Release %s/web: render %s (Fresh), 2 objects\n", ns, green.Ref))

	newRelease(t, ns, "nosource")
	r = kubectlConvoy(t, "", "release", "preview", "nosource", "-n", ns)
	require.Equal(t, 1, r.code, r)
	assert.Contains(t, r.stderr, fmt.Sprintf("error: rendering release %s/nosource failed (SourceNotFound)", ns))
}

func TestPluginSync(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newRelease(t, ns, "web")
	annotation := func() string {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		return r.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]
	}

	r := kubectlConvoy(t, "", "release", "sync", "web", "-n", ns)
	require.Equal(t, 0, r.code, r)
	m := regexp.MustCompile(`^sync requested for release ` + ns + `/web at (\S+)\n$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	assert.Equal(t, m[1], annotation(), "the printed time is the annotation")
	first, err := time.Parse(time.RFC3339, m[1])
	require.NoError(t, err)

	for _, output := range []string{"json", "yaml"} {
		r := kubectlConvoy(t, "", "release", "sync", "web", "-n", ns, "-o", output)
		require.Equal(t, 0, r.code, r)
		var s subresourcesv1alpha1.ReleaseSync
		unmarshal(t, r.stdout, &s)
		assert.Equal(t, "ReleaseSync", s.Kind)
		assert.Equal(t, "web", s.Name)
		assert.NotEmpty(t, s.RequestedBy)
		require.NotNil(t, s.RequestedAt)
		assert.True(t, s.RequestedAt.After(first), "%s after %s", s.RequestedAt, first)
		assert.Equal(t, s.RequestedAt.UTC().Format(metav1.RFC3339Micro), annotation())
	}
}

func TestPluginErrors(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))

	t.Run("missing release", func(t *testing.T) {
		for _, c := range []struct {
			command string
			code    int
		}{{"health", 1}, {"diff", 2}, {"preview", 1}, {"sync", 1}} {
			r := kubectlConvoy(t, "", "release", c.command, "nope", "-n", ns)
			assert.Equal(t, c.code, r.code, "%s: %s", c.command, r)
			assert.Equal(t, fmt.Sprintf("error: release %s/nope not found\n", ns), r.stderr, c.command)
			assert.Empty(t, r.stdout)
		}
	})
	t.Run("missing rights", func(t *testing.T) {
		grant(t, ns, "plugin-pat", subresourceRule("diff", "get"))
		pat := user(t, "plugin-pat")
		r := kubectlConvoy(t, pat, "release", "diff", "web", "-n", ns)
		assert.Equal(t, 1, r.code, "nothing applied: every object is Missing\n%s", r)
		r = kubectlConvoy(t, pat, "release", "health", "web", "-n", ns)
		assert.Equal(t, 1, r.code, r)
		assert.True(t, strings.HasPrefix(r.stderr, fmt.Sprintf("error: you need get on releases/health in subresources.convoy.kumodo.io (namespace %s)", ns)), r.stderr)
		r = kubectlConvoy(t, pat, "release", "sync", "web", "-n", ns)
		assert.Equal(t, 1, r.code, r)
		assert.True(t, strings.HasPrefix(r.stderr, fmt.Sprintf("error: you need create on releases/sync in subresources.convoy.kumodo.io (namespace %s)", ns)), r.stderr)
	})
	t.Run("usage", func(t *testing.T) {
		r := kubectlConvoy(t, "", "release", "diff")
		assert.Equal(t, 2, r.code, r)
		assert.Contains(t, r.stderr, "a release name is required")
		r = kubectlConvoy(t, "", "release", "health", "web", "-n", ns, "-o", "xml")
		assert.Equal(t, 1, r.code, r)
		assert.Contains(t, r.stderr, `unknown output format "xml"`)
	})
}

func TestPluginCompletion(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newRelease(t, ns, "web")
	newRelease(t, ns, "api")

	r := kubectlConvoy(t, "", "__complete", "release", "health", "-n", ns, "")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "api\nweb\n:4\n", r.stdout)
	r = kubectlConvoy(t, "", "__complete", "release", "diff", "-n", ns, "w")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "web\n:4\n", r.stdout)

	// kubectl's own completion of plugins runs kubectl_complete-convoy.
	r = kubectlWithPlugin(t, "", "__complete", "convoy", "release", "sync", "-n", ns, "")
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "api\nweb\n:4\n", r.stdout)

	r = kubectlConvoy(t, "", "completion", "bash")
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "kubectl-convoy")
}
