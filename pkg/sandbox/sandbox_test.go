package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/tartest"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// TestMain lets the test binary be a Sandbox's child, as convoy-apiserver's
// main does; with dialEnv set, a child that sets itself up as RunChild
// does and then tries the network (dialChild).
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == ChildArg {
		if addr := os.Getenv(dialEnv); addr != "" {
			os.Exit(dialChild(addr))
		}
		os.Exit(RunChild(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// dialEnv makes a child of this test binary try the network at the
// address it holds (dialChild).
const dialEnv = "CONVOY_RENDER_TEST_DIAL"

// dialAttempts are what a dialChild got: the error of each attempt, ""
// when it connected.
type dialAttempts struct {
	FilterErr, Dial, HTTPGet, OwnTransport string
}

// dialChild sets itself up as RunChild does (setupChild), then tries addr
// as a library could: net.Dial, http.Get (net/http's default transport,
// which the backstop replaces) and a client with a transport of its own;
// it writes what each got to standard output.
func dialChild(addr string) int {
	filterErr, err := setupChild()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	var got dialAttempts
	got.FilterErr = errText(filterErr)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
	} else {
		got.Dial = err.Error()
	}
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
	} else {
		got.HTTPGet = err.Error()
	}
	own := &http.Client{Transport: &http.Transport{}}
	if resp, err := own.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
	} else {
		got.OwnTransport = errText(err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(got)
	return 0
}

// A child has no network, by the kernel's filter (the Sandbox found it
// works, so its children must install it): net.Dial and a client with a
// transport of its own fail with EPERM, net/http's default transport with
// the backstop, and the listener sees no connection. A child that must
// install the filter and cannot would fail (setupChild).
func TestChildHasNoNetwork(t *testing.T) {
	RegisterMetrics() // unregistered metrics count nothing
	exe, err := os.Executable()
	require.NoError(t, err)
	s := New(exe, 1, childLimits(render.Limits{}))
	require.NoError(t, s.CheckNetworkFilter(context.Background()), "this machine's kernel takes seccomp filters")
	value, err := testutil.GetGaugeMetricValue(networkFiltered)
	require.NoError(t, err)
	assert.Equal(t, 1.0, value)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	cmd := exec.Command(exe, ChildArg)
	cmd.Env = append(s.childEnv(), dialEnv+"="+l.Addr().String())
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var got dialAttempts
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	assert.Empty(t, got.FilterErr)
	assert.Contains(t, got.Dial, "operation not permitted")
	assert.Contains(t, got.OwnTransport, "operation not permitted")
	assert.Contains(t, got.HTTPGet, "the render process has no network")
	assert.Zero(t, accepted.Load(), "no connection reached the listener")
	assert.Contains(t, s.childEnv(), networkFilterEnv+"=required")
}

// newSandbox returns a Sandbox whose children are this test binary, within
// limits.
func newSandbox(t *testing.T, concurrency int, limits render.Limits) *Sandbox {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return New(exe, concurrency, childLimits(limits))
}

// childLimits are limits for a child that is this test binary: with the
// race detector, whose shadow memory alone passes any sensible
// --render-memory-limit, the memory is not limited unless the test says so.
// (`make test` runs the Sandbox tests without the race detector too.)
func childLimits(limits render.Limits) render.Limits {
	if raceEnabled && limits.Memory == 0 {
		limits.Memory = 64 << 30
	}
	return limits
}

// allNamespaced is a render.Scoper to which every kind is namespaced.
type allNamespaced struct{}

func (allNamespaced) IsNamespaced(schema.GroupVersionKind) (bool, error) { return true, nil }

// renderer returns a Renderer whose charts and kustomizations runner runs
// (nil: in process), over a fake clientset of objs.
func renderer(runner render.Runner, objs ...runtime.Object) *render.Renderer {
	engine := render.NewEngine(source.NewFetcher(source.Options{}), runner, render.Limits{})
	return engine.Renderer(source.ClientInputs{Client: fake.NewClientset(objs...)}, allNamespaced{})
}

// sourceConfigMap is the ConfigMap "src" of the namespace "demo", the
// source of release(): binaryData holds a chart, data files.
func sourceConfigMap(binaryData map[string][]byte, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "src"}, BinaryData: binaryData, Data: data}
}

// release is the Release demo/app of the ConfigMap src.
func release() *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "app"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "src"}}}}
}

// buildChart is the archive of a chart of files, by path under its
// directory name.
func buildChart(t *testing.T, name string, files map[string]string) []byte {
	var entries []tartest.Entry
	for _, p := range slices.Sorted(maps.Keys(files)) {
		entries = append(entries, tartest.Entry{Name: path.Join(name, p), Data: files[p]})
	}
	return tartest.TarGz(t, entries...)
}

// chart is a request to template the chart of files, as the Release
// demo/app, within the default --max-render-objects.
func chart(t *testing.T, files map[string]string) render.ChartRequest {
	return render.ChartRequest{Where: "the chart", Chart: buildChart(t, "c", files), Name: "app", Namespace: "demo", MaxObjects: render.DefaultMaxObjects}
}

// runaway is a chart whose template loops a billion times.
func runaway(t *testing.T) render.ChartRequest {
	return chart(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: runaway\nversion: 0.1.0\n",
		"templates/loop.yaml": `{{- range $i := until 1000 }}{{ range $j := until 1000 }}{{ range $k := until 1000 }}{{ end }}{{ end }}{{ end }}
apiVersion: v1
kind: ConfigMap
metadata: {name: never}
`,
	})
}

// asJSON is the JSON of objs, to compare renders whatever their Go types.
func asJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// children lists the processes of this test's Sandboxes still running.
func children(t *testing.T) []int {
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
		if err != nil || !strings.Contains(string(cmdline), ChildArg) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 2 && fields[0] != "Z" && fields[1] == strconv.Itoa(os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A chart renders in a child as in process: the same objects, the same
// renderRef; its values (numbers among them) go through the child's JSON
// unchanged.
func TestSandboxRendersAsInProcess(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml": "replicas: 2\nratio: 1.5\n",
		"templates/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}-web}\n" +
			"spec: {replicas: {{ .Values.replicas }}}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-config}\ndata: {ratio: {{ .Values.ratio | quote }}}\n",
	}
	src := sourceConfigMap(map[string][]byte{source.ChartKey: buildChart(t, "web", files)}, nil)
	inProcess, err := renderer(nil, src).Render(context.Background(), release())
	require.NoError(t, err)
	child, err := renderer(newSandbox(t, 2, render.Limits{}), src).Render(context.Background(), release())
	require.NoError(t, err)
	assert.Equal(t, inProcess.Ref, child.Ref, "the same render, the same renderRef")
	assert.JSONEq(t, asJSON(t, inProcess.Objects), asJSON(t, child.Objects))
	assert.Len(t, child.Objects, 2)
	assert.Empty(t, children(t))

	// Errors of the chart come back as they are.
	_, ferr := newSandbox(t, 1, render.Limits{}).Template(context.Background(), render.ChartRequest{Where: "the chart", Chart: []byte("not a chart")})
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonChartInvalid, ferr.Reason)
	assert.Contains(t, ferr.Message, "the chart is not a Helm chart")
}

// A runaway template is stopped at the render timeout: the child is killed,
// so no core stays busy after the render failed.
func TestSandboxStopsARunawayTemplate(t *testing.T) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, render.ErrTimeout)
	defer cancel()
	_, ferr := newSandbox(t, 1, render.Limits{}).Template(ctx, runaway(t))
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonRenderTimeout, ferr.Reason)
	assert.Contains(t, ferr.Message, "the chart: templating the chart took longer than the render timeout (--render-timeout) and was stopped")
	assert.Empty(t, children(t), "the child was killed")
}

// Renders share the slots: with one slot taken by a runaway chart, another
// chart waits, and fails at its own timeout without starting a child.
func TestSandboxSlots(t *testing.T) {
	s := newSandbox(t, 1, render.Limits{})
	runawayCtx, stopRunaway := context.WithCancel(context.Background())
	defer stopRunaway()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = s.Template(runawayCtx, runaway(t)) })
	// A child is started only once its render holds a slot.
	require.Eventually(t, func() bool { return len(children(t)) == 1 }, time.Minute, 10*time.Millisecond, "the runaway's child never started")
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, ferr := s.Template(short, chart(t, map[string]string{"Chart.yaml": "apiVersion: v2\nname: small\nversion: 0.1.0\n"}))
	require.NotNil(t, ferr)
	assert.Contains(t, ferr.Message, "waiting for one of the renders running now")
	assert.Len(t, children(t), 1, "the waiting render started no child")
	stopRunaway()
	wg.Wait()
	assert.Eventually(t, func() bool { return len(children(t)) == 0 }, time.Minute, 10*time.Millisecond, "the runaway's child was not stopped with its context")
}

func TestSandboxBoundsItsOutput(t *testing.T) {
	big := chart(t, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: big\nversion: 0.1.0\n",
		"templates/many.yaml": "{{- range $i := until 200 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-{{ $i }}}\ndata: {x: {{ repeat 1000 \"x\" | quote }}}\n{{- end }}\n",
	})
	_, ferr := newSandbox(t, 1, render.Limits{MaxBytes: 64 << 10}).Template(context.Background(), big)
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonRenderTooLarge, ferr.Reason)
	assert.Contains(t, ferr.Message, "--max-render-bytes")
}

func TestSandboxChildThatFails(t *testing.T) {
	_, ferr := New("/bin/false", 1, render.Limits{}).Template(context.Background(), runaway(t))
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonTemplateFailed, ferr.Reason)
	assert.Contains(t, ferr.Message, "the render process failed")
}

// A chart that needs more memory than --render-memory-limit is stopped by
// the kernel (RLIMIT_DATA), not only slowed down by its Go runtime: the
// render fails with a reason of its own and the flag in the message.
func TestSandboxBoundsItsMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory counts against RLIMIT_DATA: `make test` runs this test without it")
	}
	hungry := chart(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: hungry\nversion: 0.1.0\n",
		// A string that doubles 27 times: 128 MiB, then its copies.
		"templates/hungry.yaml": "{{- $s := \"x\" }}{{- range until 27 }}{{- $s = print $s $s }}{{- end }}\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hungry}\ndata: {size: \"{{ len $s }}\"}\n",
	})
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Minute, render.ErrTimeout)
	defer cancel()
	_, ferr := newSandbox(t, 1, render.Limits{Memory: 192 << 20}).Template(ctx, hungry)
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonRenderMemoryExceeded, ferr.Reason, ferr.Message)
	assert.Contains(t, ferr.Message, "the render memory limit of 201326592 bytes (--render-memory-limit)")
	assert.Equal(t, failure.ClassOverLimit, failure.ClassOf(ferr.Reason))
	assert.Empty(t, children(t))

	// The same chart with room for it renders.
	_, ferr = newSandbox(t, 1, render.Limits{Memory: 1 << 30}).Template(ctx, hungry)
	require.Nil(t, ferr)
}

// A chart past --max-render-objects stops at the limit, in the child and
// when its answer is decoded.
func TestSandboxCountsObjects(t *testing.T) {
	many := chart(t, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: many\nversion: 0.1.0\n",
		"templates/many.yaml": "{{- range $i := until 50 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-{{ $i }}}\n{{- end }}\n",
	})
	many.MaxObjects = 20
	_, ferr := newSandbox(t, 1, render.Limits{}).Template(context.Background(), many)
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonTooManyObjects, ferr.Reason)
	assert.Contains(t, ferr.Message, "more objects than the limit of 20 (--max-render-objects)")

	// A child that answers with more objects than asked is cut at the limit
	// too.
	answer := "[" + strings.Repeat(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},`, 30) + "{}]"
	_, ferr = decodeResponse("here", []byte(answer), 20)
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonTooManyObjects, ferr.Reason)
	objs, ferr := decodeResponse("here", []byte(answer), 100)
	require.Nil(t, ferr)
	assert.Len(t, objs, 31)
	_, ferr = decodeResponse("here", []byte(`{"reason":"TemplateFailed","message":"boom"}`), 100)
	require.NotNil(t, ferr)
	assert.Equal(t, "boom", ferr.Message)
	_, ferr = decodeResponse("here", []byte(`garbage`), 100)
	require.NotNil(t, ferr)
	assert.Equal(t, render.ReasonTemplateFailed, ferr.Reason)
}

// overlay is a kustomization (overlay) of a base that names a remote file
// when remote is set.
func overlay(remote string) map[string][]byte {
	base := "resources:\n- cm.yaml\n"
	if remote != "" {
		base += "- " + remote + "\n"
	}
	return map[string][]byte{
		"base/kustomization.yaml":    []byte(base),
		"base/cm.yaml":               []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: \"1\"}\n"),
		"overlay/kustomization.yaml": []byte("resources:\n- ../base\nnamePrefix: prod-\nconfigMapGenerator:\n- name: extra\n  literals: [b=2]\n"),
	}
}

// The Sandbox builds a kustomization as the process does.
func TestSandboxBuildsAsInProcess(t *testing.T) {
	req := render.KustomizeRequest{Where: "the bundle", Files: overlay(""), Dir: "overlay", MaxObjects: 10}
	inProcess, ferr := render.InProcess{}.Build(context.Background(), req)
	require.Nil(t, ferr)
	child, ferr := newSandbox(t, 1, render.Limits{}).Build(context.Background(), req)
	require.Nil(t, ferr)
	assert.Len(t, child, 2)
	assert.JSONEq(t, asJSON(t, inProcess), asJSON(t, child))
}

// The child that builds refuses, in net/http's default transport (the
// backstop behind the walk), a remote file that the walk did not check:
// the build fails without a request. The kernel's filter, which refuses
// every Internet socket, is TestChildHasNoNetwork's. A render refuses it
// before it reaches the Sandbox (kustomize.Check).
func TestSandboxBuildBackstopRefusesRemoteFiles(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"))
	}))
	t.Cleanup(srv.Close)
	s := newSandbox(t, 1, render.Limits{})
	_, ferr := s.Build(context.Background(), render.KustomizeRequest{Where: "the bundle", Files: overlay(srv.URL + "/cm.yaml"), Dir: "overlay", MaxObjects: 10})
	require.NotNil(t, ferr)
	assert.Equal(t, kustomize.ReasonKustomizeInvalid, ferr.Reason)
	assert.Contains(t, ferr.Message, "the render process has no network")

	data := map[string]string{"kustomization.yaml": "resources:\n- " + srv.URL + "/cm.yaml\n"}
	_, err := renderer(s, sourceConfigMap(nil, data)).Render(context.Background(), release())
	assert.Equal(t, kustomize.ReasonKustomizeRemoteRefused, failure.ReasonOf(err), "%v", err)
	assert.Zero(t, requests.Load())
}
