//go:build unix

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sandbox"
)

// chartTGZ packs files into a chart archive under the directory name.
func chartTGZ(t *testing.T, name string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for path, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + path, Mode: 0o644, Size: int64(len(content))}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// newChartRelease creates a Release whose source ConfigMap holds the chart.
func newChartRelease(t *testing.T, namespace, name string, tgz []byte, opts ...releaseOption) {
	t.Helper()
	_, err := kubeClient(t).CoreV1().ConfigMaps(namespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-manifests"},
		BinaryData: map[string][]byte{"chart.tgz": tgz},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createRelease(t, namespace, name, opts...)
}

// renderChildren lists the render processes convoy-apiserver is running.
func renderChildren(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), sandbox.ChildArg) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// peakMemory is the peak resident memory of convoy-apiserver, in bytes.
func peakMemory(t *testing.T) int64 {
	t.Helper()
	return peakMemoryOf(t, env.cp.ConvoyAPIServer().PID())
}

// peakMemoryOf is the peak resident memory (VmHWM) of the process pid.
func peakMemoryOf(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.Fail(t, "no VmHWM")
	return 0
}

// Each bad input ends with a clear reason, the Releases next to it keep
// being checked, and the server keeps serving.
func TestBadInputs(t *testing.T) {
	// Not parallel: it counts the render processes of the machine and reads
	// the server's peak memory; its runaway chart holds a render slot for
	// --render-timeout.
	ns := newNamespace(t)
	newDriftRelease(t, ns, "control", webManifests("blue", "1.0"))
	newStandIn(t).apply(ns, "control")
	waitInSync(t, ns, "control", metav1.ConditionTrue, "InSync")

	cases := []struct {
		name     string
		setup    func(t *testing.T, name string)
		reason   string
		messages []string
		check    func(t *testing.T, name string)
	}{
		{name: "runaway", reason: render.ReasonRenderTimeout, messages: []string{"--render-timeout", "was stopped"},
			setup: func(t *testing.T, name string) {
				newChartRelease(t, ns, name, chartTGZ(t, "runaway", map[string]string{
					"Chart.yaml":          "apiVersion: v2\nname: runaway\nversion: 0.1.0\n",
					"templates/loop.yaml": "{{- range $i := until 1000 }}{{ range $j := until 1000 }}{{ range $k := until 1000 }}{{ end }}{{ end }}{{ end }}\n",
				}), hourly) // one pass, so that no render runs when the test looks
			},
			check: func(t *testing.T, _ string) {
				eventually(t, "no render process left", func(context.Context) error {
					if pids := renderChildren(t); len(pids) > 0 {
						return fmt.Errorf("render processes %v", pids)
					}
					return nil
				})
			}},
		{name: "fail", reason: "RenderFailed", messages: []string{"TemplateFailed", "chart says no: xxxxxxxx"},
			setup: func(t *testing.T, name string) {
				newChartRelease(t, ns, name, chartTGZ(t, "failing", map[string]string{
					"Chart.yaml":          "apiVersion: v2\nname: failing\nversion: 0.1.0\n",
					"templates/fail.yaml": `{{ fail (printf "chart says no: %s" (repeat 2000 "x")) }}`,
				}))
			},
			check: func(t *testing.T, name string) {
				eventually(t, "the InSync Event, truncated", func(ctx context.Context) error {
					events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
					if err != nil {
						return err
					}
					for _, e := range events.Items {
						if e.Regarding.Name == name && e.Reason == "Undetermined" {
							assert.LessOrEqual(t, len(e.Note), 1024)
							assert.Contains(t, e.Note, "truncated]")
							return nil
						}
					}
					return fmt.Errorf("no Undetermined Event for %s", name)
				})
			}},
		{name: "inflating", reason: render.ReasonStoredRenderTooLarge, messages: []string{"--max-render-bytes"},
			setup: func(t *testing.T, name string) {
				var buf bytes.Buffer
				zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
				require.NoError(t, err)
				_, _ = zw.Write([]byte("["))
				chunk := bytes.Repeat([]byte(" "), 1<<20)
				for range 300 {
					_, err = zw.Write(chunk)
					require.NoError(t, err)
				}
				require.NoError(t, zw.Close())
				const ref = "00000000000bad00"
				_, err = kubeClient(t).CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: render.SecretName(name, ref)},
					Type:       render.SecretType, Data: map[string][]byte{render.SecretKey: buf.Bytes()},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
				newDriftRelease(t, ns, name, webManifests("blue", "1.0"), func(r *convoyv1alpha1.Release) {
					r.Spec.Pin = &convoyv1alpha1.Pin{RenderRef: ref}
				})
			},
			check: func(t *testing.T, _ string) {
				assert.Less(t, peakMemory(t), int64(250<<20), "convoy-apiserver never held the 300 MB")
			}},
		{name: "too-many", reason: render.ReasonTooManyObjects, messages: []string{"6001 objects", "--max-render-objects"},
			setup: func(t *testing.T, name string) {
				var b strings.Builder
				for i := range 6001 {
					fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c%d}}\n", i)
				}
				newDriftRelease(t, ns, name, map[string]string{"many.yaml": b.String()})
			}},
		{name: "malformed", reason: "RenderFailed", messages: []string{"ManifestInvalid", "key bad.yaml"},
			setup: func(t *testing.T, name string) {
				newDriftRelease(t, ns, name, map[string]string{"bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [unclosed\n"})
			}},
		{name: "alias-bomb", reason: "RenderFailed", messages: []string{"ManifestInvalid"},
			setup: func(t *testing.T, name string) {
				bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
					"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
					"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
				newDriftRelease(t, ns, name, map[string]string{"bomb.yaml": bomb})
			}},
		{name: "scalar-items", reason: "RenderFailed", messages: []string{"ManifestInvalid", "List item 2"},
			setup: func(t *testing.T, name string) {
				newDriftRelease(t, ns, name, map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- 42\n"})
			}},
		{name: "duplicates", reason: "RenderFailed", messages: []string{"ManifestInvalid", "duplicate object"},
			setup: func(t *testing.T, name string) {
				cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same}\n"
				newDriftRelease(t, ns, name, map[string]string{"a.yaml": cm, "b.yaml": cm})
			}},
		{name: "no-name", reason: "RenderFailed", messages: []string{"ManifestInvalid", "has no metadata.name"},
			setup: func(t *testing.T, name string) {
				newDriftRelease(t, ns, name, map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"})
			}},
		// The namespace of a cluster-scoped object is dropped; the Release's
		// ServiceAccount may not read ClusterRoles: Forbidden, and said so.
		{name: "scoped", reason: "Forbidden", messages: []string{"ClusterRole.rbac.authorization.k8s.io e2e-scoped-" + ns, "may not get it"},
			setup: func(t *testing.T, name string) {
				newDriftRelease(t, ns, name, map[string]string{"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n" +
					"metadata: {name: e2e-scoped-" + ns + ", namespace: " + ns + "}\nrules: []\n"})
			},
			check: func(t *testing.T, name string) {
				objs := previewObjects(t, preview(t, ns, name, ""))
				require.Len(t, objs, 1)
				assert.Empty(t, objs[0].GetNamespace(), "a cluster-scoped object has no namespace")
			}},
	}
	for _, tc := range cases {
		tc.setup(t, tc.name)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertUndetermined(t, ns, tc.name, tc.reason, tc.messages...)
			if tc.check != nil {
				tc.check(t, tc.name)
			}
		})
	}

	// The Release next to them was checked all along, and still is.
	assert.Equal(t, metav1.ConditionTrue, inSyncOf(t, ns, "control").Status)
	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=4")
	waitInSync(t, ns, "control", metav1.ConditionFalse, "Drifted")
	_, body := replicaGet(t, env.cp.ConvoyAPIServer(), "/readyz")
	assert.Equal(t, "ok", strings.TrimSpace(body))
}

// The server found, at its start, that its render processes run under the
// kernel's network filter (pkg/render: the probe child's sockets were
// refused), and says so on /metrics.
func TestRenderProcessesWithoutNetwork(t *testing.T) {
	// Not parallel: it reads the server's /metrics.
	assert.Equal(t, "1", metric(t, env.cp.ConvoyAPIServer(), "convoy_render_network_filter"))
}
