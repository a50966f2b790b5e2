package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
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
	s := NewSandbox(exe, 1, childLimits(Limits{}))
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

// sandboxed returns a Renderer whose charts are templated by children of
// this test binary, within limits.
func sandboxed(t *testing.T, concurrency int, limits Limits, objs ...runtime.Object) *Renderer {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	engine := NewEngine(source.NewFetcher(source.Options{}), NewSandbox(exe, concurrency, childLimits(limits)), limits)
	return engine.Renderer(source.ClientInputs{Client: fake.NewClientset(objs...)}, MapperScoper{Mapper: testMapper()})
}

// childLimits are limits for a child that is this test binary: with the
// race detector, whose shadow memory alone passes any sensible
// --render-memory-limit, the memory is not limited unless the test says so.
// (`make test` runs the Sandbox tests without the race detector too.)
func childLimits(limits Limits) Limits {
	if raceEnabled && limits.Memory == 0 {
		limits.Memory = 64 << 30
	}
	return limits
}

// runaway is a chart whose template loops a billion times.
func runaway(t *testing.T) []byte {
	return buildChart(t, "runaway", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: runaway\nversion: 0.1.0\n",
		"templates/loop.yaml": `{{- range $i := until 1000 }}{{ range $j := until 1000 }}{{ range $k := until 1000 }}{{ end }}{{ end }}{{ end }}
apiVersion: v1
kind: ConfigMap
metadata: {name: never}
`,
	})
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

func TestSandboxRendersAsInProcess(t *testing.T) {
	tgz := buildChart(t, "mychart", testChartFiles())
	objs := []runtime.Object{chartConfigMap("src", tgz),
		configMap("vals", map[string]string{"values.yaml": "shared: configmap\nimage: {tag: \"2.0\"}\nreplicas: 2\n"})}
	rel := release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{
			ValuesFrom: []convoyv1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "vals"}},
			Values:     raw(t, map[string]any{"shared": "inline", "ratio": 1.5}),
		}
	})
	inProcess := renderOK(t, newTestRenderer(objs...), rel)
	child := renderOK(t, sandboxed(t, 2, Limits{}, objs...), rel)
	assert.Equal(t, inProcess.Ref, child.Ref, "the same render, the same renderRef")
	assert.Equal(t, keys(inProcess.Objects), keys(child.Objects))
	assert.Empty(t, children(t))

	// Errors of the chart come back as they are.
	bad := sandboxed(t, 1, Limits{}, chartConfigMap("src", []byte("not a chart")))
	rerr := renderErr(t, bad, release("src"), ReasonChartInvalid)
	assert.Contains(t, rerr.Message, "ConfigMap demo/src binaryData chart.tgz is not a Helm chart")
}

// A runaway template is stopped at the render timeout: the child is killed,
// so no core stays busy after the render failed.
func TestSandboxStopsARunawayTemplate(t *testing.T) {
	r := sandboxed(t, 1, Limits{Timeout: time.Second}, chartConfigMap("src", runaway(t)))
	rerr := renderErr(t, r, release("src"), ReasonRenderTimeout)
	assert.Contains(t, rerr.Message, "ConfigMap demo/src binaryData chart.tgz: templating the chart took longer than the render timeout (--render-timeout) and was stopped")
	assert.Empty(t, children(t), "the child was killed")
}

// Renders share the slots: with one slot taken by a runaway chart, another
// chart waits, and fails at its own timeout without starting a child.
func TestSandboxSlots(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	// The engine's timeout is long: the runaway holds the slot until the
	// test cancels it, however slow the machine is.
	engine := NewEngine(source.NewFetcher(source.Options{}), NewSandbox(exe, 1, childLimits(Limits{})), Limits{Timeout: time.Minute})
	client := fake.NewClientset(chartConfigMap("runaway", runaway(t)), chartConfigMap("small", buildChart(t, "mychart", testChartFiles())))
	r := engine.Renderer(source.ClientInputs{Client: client}, MapperScoper{Mapper: testMapper()})
	runawayCtx, stopRunaway := context.WithCancel(context.Background())
	defer stopRunaway()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = r.Render(runawayCtx, release("runaway")) })
	// A child is started only once its render holds a slot.
	require.Eventually(t, func() bool { return len(children(t)) == 1 }, time.Minute, 10*time.Millisecond, "the runaway's child never started")
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = r.Render(short, release("small"))
	var rerr *failure.Error
	require.True(t, errors.As(err, &rerr), "%v", err)
	assert.Contains(t, rerr.Message, "waiting for one of the renders running now")
	assert.Len(t, children(t), 1, "the waiting render started no child")
	stopRunaway()
	wg.Wait()
	assert.Eventually(t, func() bool { return len(children(t)) == 0 }, time.Minute, 10*time.Millisecond, "the runaway's child was not stopped with its context")
}

func TestSandboxBoundsItsOutput(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: big\nversion: 0.1.0\n",
		"templates/many.yaml": "{{- range $i := until 200 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-{{ $i }}}\ndata: {x: {{ repeat 1000 \"x\" | quote }}}\n{{- end }}\n",
	}
	r := sandboxed(t, 1, Limits{MaxBytes: 64 << 10}, chartConfigMap("src", buildChart(t, "big", files)))
	rerr := renderErr(t, r, release("src"), ReasonRenderTooLarge)
	assert.Contains(t, rerr.Message, "--max-render-bytes")
}

func TestSandboxChildThatFails(t *testing.T) {
	engine := NewEngine(source.NewFetcher(source.Options{}), NewSandbox("/bin/false", 1, Limits{}), Limits{})
	r := engine.Renderer(source.ClientInputs{Client: fake.NewClientset(chartConfigMap("src", runaway(t)))}, MapperScoper{Mapper: testMapper()})
	rerr := renderErr(t, r, release("src"), ReasonTemplateFailed)
	assert.Contains(t, rerr.Message, "the render process failed")
}

// A chart that needs more memory than --render-memory-limit is stopped by
// the kernel (RLIMIT_DATA), not only slowed down by its Go runtime: the
// render fails with a reason of its own and the flag in the message.
func TestSandboxBoundsItsMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory counts against RLIMIT_DATA: `make test` runs this test without it")
	}
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: hungry\nversion: 0.1.0\n",
		// A string that doubles 27 times: 128 MiB, then its copies.
		"templates/hungry.yaml": "{{- $s := \"x\" }}{{- range until 27 }}{{- $s = print $s $s }}{{- end }}\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hungry}\ndata: {size: \"{{ len $s }}\"}\n",
	}
	r := sandboxed(t, 1, Limits{Memory: 192 << 20, Timeout: time.Minute}, chartConfigMap("src", buildChart(t, "hungry", files)))
	rerr := renderErr(t, r, release("src"), ReasonRenderMemoryExceeded)
	assert.Contains(t, rerr.Message, "the render memory limit of 201326592 bytes (--render-memory-limit)")
	assert.Equal(t, failure.ClassOverLimit, failure.ClassOf(rerr.Reason))
	assert.Empty(t, children(t))

	// The same chart with room for it renders.
	renderOK(t, sandboxed(t, 1, Limits{Memory: 1 << 30, Timeout: time.Minute}, chartConfigMap("src", buildChart(t, "hungry", files))), release("src"))
}

// A chart past --max-render-objects stops at the limit, in the child and
// when its answer is decoded.
func TestSandboxCountsObjects(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: many\nversion: 0.1.0\n",
		"templates/many.yaml": "{{- range $i := until 50 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-{{ $i }}}\n{{- end }}\n",
	}
	r := sandboxed(t, 1, Limits{MaxObjects: 20}, chartConfigMap("src", buildChart(t, "many", files)))
	rerr := renderErr(t, r, release("src"), ReasonTooManyObjects)
	assert.Contains(t, rerr.Message, "more objects than the limit of 20 (--max-render-objects)")

	// A child that answers with more objects than asked is cut at the limit
	// too.
	answer := "[" + strings.Repeat(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},`, 30) + "{}]"
	_, ferr := decodeResponse("here", []byte(answer), 20)
	require.NotNil(t, ferr)
	assert.Equal(t, ReasonTooManyObjects, ferr.Reason)
	objs, ferr := decodeResponse("here", []byte(answer), 100)
	require.Nil(t, ferr)
	assert.Len(t, objs, 31)
	_, ferr = decodeResponse("here", []byte(`{"reason":"TemplateFailed","message":"boom"}`), 100)
	require.NotNil(t, ferr)
	assert.Equal(t, "boom", ferr.Message)
	_, ferr = decodeResponse("here", []byte(`garbage`), 100)
	require.NotNil(t, ferr)
	assert.Equal(t, ReasonTemplateFailed, ferr.Reason)
}
