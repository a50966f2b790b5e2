//go:build unix

// Command bench measures the drift check of a Release of N objects against a
// local control plane several ways in one run (what `make bench` runs):
// convoy's engine in this process (cold, cold without the read-ahead, warm),
// GET releases/NAME/diff (cold, warm) and `kubectl diff --server-side -f`,
// with the API requests of each. What cold means, and what it measured:
// docs/contributors/performance.md ("One check").
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

const namespace = "bench"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	binDir := flag.String("bin-dir", "", "directory with etcd, kube-apiserver and kubectl (hack/testbin.sh)")
	convoyBin := flag.String("convoy-apiserver", "bin/convoy-apiserver", "convoy-apiserver binary")
	objects := flag.Int("objects", 500, "objects in the Release (split evenly between ConfigMaps, Deployments and Services)")
	runs := flag.Int("runs", 5, "measured runs of each way; the median is reported")
	cpuProfile := flag.String("cpu-profile", "", "after the runs, take CPU profiles into this file prefix: of kube-apiserver and of this process while it runs cold engine checks, and of kube-apiserver while kubectl diff runs")
	profileSeconds := flag.Int("cpu-profile-seconds", 20, "how long each profile of --cpu-profile lasts")
	flag.Parse()
	if *binDir == "" {
		return fmt.Errorf("--bin-dir is required")
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "convoy-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: dir, BinDir: *binDir,
		CRDDir:          filepath.Join(root, "artifacts/crds"),
		ManifestDirs:    []string{filepath.Join(root, "artifacts/rbac")},
		ConvoyAPIServer: *convoyBin,
		Out:             os.Stderr,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()

	manifest := manifests(*objects)
	file := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		return err
	}
	if out, err := cp.Kubectl("create", "namespace", namespace).CombinedOutput(); err != nil {
		return fmt.Errorf("create namespace: %w: %s", err, out)
	}
	// /diff acts as the Release's ServiceAccount (default of the namespace).
	if err := cp.GrantServiceAccounts(ctx, namespace); err != nil {
		return err
	}
	if err := cp.AllowImpersonation(ctx, namespace); err != nil {
		return err
	}
	if out, err := cp.Kubectl("apply", "--server-side", "--field-manager=convoy", "-f", file).CombinedOutput(); err != nil {
		return fmt.Errorf("apply: %w: %s", err, out)
	}
	// One drifted object, so that every way has a change to report.
	if out, err := cp.Kubectl("scale", "deployment", "app-0", "-n", namespace, "--replicas=3").CombinedOutput(); err != nil {
		return fmt.Errorf("scale: %w: %s", err, out)
	}
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-manifests"}, Data: map[string]string{"objects.yaml": manifest},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	convoy, err := convoyclient.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	release, err := convoy.ConvoyV1alpha1().Releases(namespace).Create(ctx, &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{
			ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "app-manifests"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}

	// The engine in this process, with a counting transport.
	var requests atomic.Int64
	cfg := cp.AdminConfig()
	cfg.QPS, cfg.Burst = cluster.DefaultQPS, cluster.DefaultBurst
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} })
	counted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, mapper, err := dynamicAndMapper(cfg, counted)
	if err != nil {
		return err
	}
	// A ConfigMap source: the Fetcher's defaults refuse no address it needs.
	renderEngine := render.NewEngine(source.NewFetcher(source.Options{}), nil, render.Limits{})
	renderer := renderEngine.Renderer(source.ClientInputs{Client: counted}, render.MapperScoper{Mapper: mapper})
	touch, err := toucher(cp, manifest)
	if err != nil {
		return err
	}
	// engine runs a render and a compare with a Reader of its own (a cold
	// read-ahead), and counts their requests into reqs.
	engine := func(e *compare.Engine, readAhead bool, reqs *[]int64) func() error {
		return func() error {
			requests.Store(0)
			r, err := renderer.Render(ctx, release)
			if err != nil {
				return err
			}
			var client compare.Cluster = cluster.NewReader(dyn, mapper, "admin")
			if !readAhead {
				client = oneByOne{client}
			}
			res := e.Compare(ctx, client, r.Objects)
			if res.Verdict != subresourcesv1alpha1.DiffDrifted {
				return fmt.Errorf("engine: %s %s: %s", res.Verdict, res.Reason, res.Message)
			}
			*reqs = append(*reqs, requests.Load())
			return nil
		}
	}
	var coldReqs, oneByOneReqs, warmReqs []int64
	// Cold: no compare to reuse (a new engine, no cache), every object read
	// (ahead, by LIST where it is worth it) and dry-run.
	kas := cp.KubeAPIServerPID()
	self := func() float64 { return controlplane.CPUSeconds(os.Getpid()) }
	coldEngine, err := measure(*runs, kas, self, touch, engine(compare.NewEngine(redact.New(), compare.DefaultWorkers), true, &coldReqs))
	if err != nil {
		return err
	}
	oneByOneEngine, err := measure(*runs, kas, self, touch, engine(compare.NewEngine(redact.New(), compare.DefaultWorkers), false, &oneByOneReqs))
	if err != nil {
		return err
	}
	// Warm: the compares of the run before are reused when the live object
	// did not change (as /diff reuses them): reads, no dry run.
	warm := compare.NewEngine(redact.New(), compare.DefaultWorkers).WithCache(compare.NewResultCache(time.Hour, clock.RealClock{}))
	warmEngine, err := measure(*runs, kas, self, nil, engine(warm, true, &warmReqs))
	if err != nil {
		return err
	}

	// GET /diff through the aggregator: cold when every live object changed
	// since the last one (touched: its compare cannot be reused), warm when
	// nothing did.
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	path := fmt.Sprintf("/apis/%s/v1alpha1/namespaces/%s/releases/app/diff", subresourcesv1alpha1.GroupName, namespace)
	diff := func() error {
		body, err := admin.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !bytes.Contains(body, []byte(`"result":"Drifted"`)) {
			return fmt.Errorf("/diff: %s", body[:min(len(body), 300)])
		}
		return nil
	}
	convoyCPU := func() float64 { return controlplane.CPUSeconds(cp.ConvoyAPIServer().PID()) }
	coldDiff, err := measure(*runs, kas, convoyCPU, touch, diff)
	if err != nil {
		return err
	}
	warmDiff, err := measure(*runs, kas, convoyCPU, nil, diff)
	if err != nil {
		return err
	}

	// kubectl diff --server-side on the same objects: a new process each
	// run, cold.
	var kubectlReqs []int64
	var kubectlCPU float64 // of every kubectl run so far
	kubectlDiff := func() error {
		cmd := cp.Kubectl("diff", "--server-side", "--field-manager=convoy", "--force-conflicts", "-f", file, "-v=6")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if cmd.ProcessState != nil {
			kubectlCPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		}
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
			return fmt.Errorf("kubectl diff: want exit 1 (differences), got %v: %s", err, tail(stderr.String()))
		}
		kubectlReqs = append(kubectlReqs, int64(len(responseLine.FindAllString(stderr.String(), -1))))
		return nil
	}
	kubectlTimes, err := measure(*runs, kas, func() float64 { return kubectlCPU }, touch, kubectlDiff)
	if err != nil {
		return err
	}

	n := float64(*objects)
	k := median(kubectlTimes.took)
	fmt.Printf("\nDrift check of a Release of %d objects (%d ConfigMaps, %d Deployments, %d Services), median of %d runs.\n",
		*objects, *objects-2*(*objects/3), *objects/3, *objects/3, *runs)
	fmt.Printf("Cold: every live object changed since the last check (no compare can be reused); warm: nothing did.\n\n")
	fmt.Printf("Client CPU: this process for the engine, convoy-apiserver for /diff, the kubectl process for kubectl.\n\n")
	fmt.Printf("| way | cache | wall time | vs kubectl (cold) | API requests | per object | kube-apiserver CPU | client CPU |\n|---|---|---|---|---|---|---|---|\n")
	row := func(way, state string, m samples, reqs []int64) {
		t := median(m.took)
		cells := "| | |"
		if reqs != nil {
			cells = fmt.Sprintf("| %d | %.2f |", medianInt(reqs), float64(medianInt(reqs))/n)
		}
		fmt.Printf("| %s | %s | %s | %.1fx faster %s %.2f s | %.2f s |\n", way, state, t.Round(time.Millisecond), k.Seconds()/t.Seconds(), cells,
			m.kasPerRun(), m.clientPerRun())
	}
	row("convoy engine (render + compare, in process)", "**cold**", coldEngine, coldReqs)
	row("convoy engine, a GET per object (no read-ahead)", "cold", oneByOneEngine, oneByOneReqs)
	row("convoy engine", "warm", warmEngine, warmReqs)
	row("GET releases/app/diff (through the aggregator)", "**cold**", coldDiff, nil)
	row("GET releases/app/diff", "warm", warmDiff, nil)
	fmt.Printf("| kubectl diff --server-side -f | **cold** | %s | 1.0x | %d | %.2f | %.2f s | %.2f s |\n",
		k.Round(time.Millisecond), medianInt(kubectlReqs), float64(medianInt(kubectlReqs))/n, kubectlTimes.kasPerRun(), kubectlTimes.clientPerRun())
	fmt.Printf("\nHeadline, cold against cold: the engine %.1fx, /diff %.1fx faster than kubectl diff --server-side.\n",
		k.Seconds()/median(coldEngine.took).Seconds(), k.Seconds()/median(coldDiff.took).Seconds())
	fmt.Printf("kube-apiserver CPU per cold check: the engine %.2f s, /diff %.2f s, kubectl %.2f s (%d cores: the least wall time that CPU allows is %.0f ms, %.0f ms, %.0f ms).\n",
		coldEngine.kasPerRun(), coldDiff.kasPerRun(), kubectlTimes.kasPerRun(), runtime.NumCPU(),
		1000*coldEngine.kasPerRun()/float64(runtime.NumCPU()), 1000*coldDiff.kasPerRun()/float64(runtime.NumCPU()), 1000*kubectlTimes.kasPerRun()/float64(runtime.NumCPU()))

	if *cpuProfile != "" {
		d := time.Duration(*profileSeconds) * time.Second
		checks, err := profile(ctx, admin, *cpuProfile+"-engine", d, true, engine(compare.NewEngine(redact.New(), compare.DefaultWorkers), true, new([]int64)))
		if err != nil {
			return err
		}
		fmt.Printf("\nCPU profiles of %s: %d cold engine checks in %s-engine-kube-apiserver.cpu.pprof and %s-engine-self.cpu.pprof.\n", d, checks, *cpuProfile, *cpuProfile)
		if checks, err = profile(ctx, admin, *cpuProfile+"-kubectl", d, false, kubectlDiff); err != nil {
			return err
		}
		fmt.Printf("CPU profile of %s: %d kubectl diff runs in %s-kubectl-kube-apiserver.cpu.pprof.\n", d, checks, *cpuProfile)
	}
	return nil
}

// profile runs check again and again for d while kube-apiserver's CPU is
// profiled into PREFIX-kube-apiserver.cpu.pprof, and, with self, this
// process's into PREFIX-self.cpu.pprof; it returns how many checks ran. A
// check is cold without a touch before it when it uses a new engine (no
// compare to reuse); kubectl diff is always cold.
func profile(ctx context.Context, admin kubernetes.Interface, prefix string, d time.Duration, self bool, check func() error) (int, error) {
	secs := strconv.Itoa(int(d.Seconds()))
	kasDone := make(chan error, 1)
	go func() {
		body, err := admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).Timeout(d + time.Minute).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(prefix+"-kube-apiserver.cpu.pprof", body, 0o644)
		}
		kasDone <- err
	}()
	if self {
		f, err := os.Create(prefix + "-self.cpu.pprof")
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	checks := 0
	for end := time.Now().Add(d); time.Now().Before(end); checks++ {
		if err := check(); err != nil {
			return checks, err
		}
	}
	if err := <-kasDone; err != nil {
		return checks, fmt.Errorf("CPU profile of kube-apiserver: %w", err)
	}
	return checks, nil
}

// oneByOne is a Cluster that does not read ahead: the engine reads each
// object with a GET.
type oneByOne struct{ compare.Cluster }

// ReadAhead implements compare.Cluster: nothing is read ahead.
func (oneByOne) ReadAhead(context.Context, []*unstructured.Unstructured) {}

// toucher returns a function that changes every live object of the Release
// (an annotation of a field manager of its own, which the compare ignores),
// so that no compare made before can be reused: what a cold check sees.
func toucher(cp *controlplane.ControlPlane, manifest string) (func() error, error) {
	dyn, err := dynamic.NewForConfig(cp.AdminConfig())
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(manifest, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
	var round atomic.Int64
	return func() error {
		n := round.Add(1)
		return parallel(16, len(objs), func(i int) error {
			o := objs[i]
			touch := &unstructured.Unstructured{}
			touch.SetAPIVersion(o.GetAPIVersion())
			touch.SetKind(o.GetKind())
			touch.SetName(o.GetName())
			touch.SetNamespace(namespace)
			touch.SetAnnotations(map[string]string{"bench.convoy.kumodo.io/round": strconv.FormatInt(n, 10)})
			_, err := dyn.Resource(resourceOf(o.GetKind())).Namespace(namespace).Apply(context.Background(), o.GetName(), touch,
				metav1.ApplyOptions{FieldManager: "bench-touch", Force: true})
			return err
		})
	}, nil
}

// resourceOf is the resource of the kinds of the benchmark.
func resourceOf(kind string) schema.GroupVersionResource {
	switch kind {
	case "Deployment":
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	case "Service":
		return schema.GroupVersionResource{Version: "v1", Resource: "services"}
	}
	return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
}

// parallel runs f(0..n-1), workers at a time, and returns the first error.
func parallel(workers, n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, workers)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// responseLine matches one response in kubectl's -v=6 log.
var responseLine = regexp.MustCompile(`(?m)"Response" verb=|^I.*\] (GET|PATCH|POST|PUT|DELETE) https://`)

type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

func dynamicAndMapper(cfg *rest.Config, kube kubernetes.Interface) (*dynamic.DynamicClient, *cluster.Mapper, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return dyn, cluster.NewMapper(kube.Discovery(), clock.RealClock{}, cluster.DefaultRefreshInterval), nil
}

// samples are the measured runs of one way: their wall times, and the CPU
// seconds kube-apiserver and the client used in all of them.
type samples struct {
	took        []time.Duration
	kas, client float64
}

func (s samples) kasPerRun() float64    { return s.kas / float64(len(s.took)) }
func (s samples) clientPerRun() float64 { return s.client / float64(len(s.took)) }

// measure runs f once to warm up (connections, discovery), then runs times,
// each after before (not timed, nor its CPU counted) when it is set, with the
// CPU seconds of kube-apiserver (process kas) and of the client (what
// client returns: its CPU so far) over the runs of f.
func measure(runs, kas int, client func() float64, before, f func() error) (samples, error) {
	var s samples
	if err := f(); err != nil { // warm-up: connections, discovery
		return s, err
	}
	for range runs {
		if before != nil {
			if err := before(); err != nil {
				return s, err
			}
		}
		kasBefore, clientBefore := controlplane.CPUSeconds(kas), client()
		start := time.Now()
		if err := f(); err != nil {
			return s, err
		}
		s.took = append(s.took, time.Since(start))
		s.kas += controlplane.CPUSeconds(kas) - kasBefore
		s.client += client() - clientBefore
	}
	return s, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianInt(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// manifests returns n objects: Deployments app-i, Services app-i and
// ConfigMaps config-i.
func manifests(n int) string {
	var b strings.Builder
	third := n / 3
	for i := range third {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]d, namespace: %[2]s, labels: {app: app-%[1]d}}
spec:
  replicas: 1
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1.%[1]d
        ports: [{name: http, containerPort: 8080}]
        env: [{name: INDEX, value: "%[1]d"}]
---
apiVersion: v1
kind: Service
metadata: {name: app-%[1]d, namespace: %[2]s}
spec:
  selector: {app: app-%[1]d}
  ports: [{name: http, port: 80, targetPort: http}]
`, i, namespace)
	}
	for i := range n - 2*third {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-%d, namespace: %s}\ndata: {index: \"%d\", color: blue}\n", i, namespace, i)
	}
	return b.String()
}
