//go:build unix

// Command bench-fleet measures convoy-apiserver's drift loop on a fleet of
// Releases in one namespace of a local control plane, with the cache off and
// then on, round by round (what `make bench-fleet` runs). What it runs and
// prints, and its flags: docs/contributors/internals.md ("Fleet scale"); what
// it measured: docs/contributors/performance.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
)

const (
	namespace        = "fleet"
	objectsPerRel    = 20
	configMapsPerRel = 14
	servicesPerRel   = 3
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		os.Exit(1)
	}
}

func run() error {
	binDir := flag.String("bin-dir", "", "directory with etcd, kube-apiserver and kubectl (hack/testbin.sh)")
	convoyBin := flag.String("convoy-apiserver", "bin/convoy-apiserver", "convoy-apiserver binary")
	verbose := flag.Bool("v", false, "print the control plane's progress")
	heap := flag.String("heap-profile", "", "write convoy-apiserver's heap profile and goroutines after the rounds of each mode to this file prefix")
	releases := flag.Int("releases", 1000, "Releases of 20 objects")
	driftPercent := flag.Float64("drift", 1, "percent of the objects changed by another manager")
	timeout := flag.Duration("round-timeout", 30*time.Minute, "longest round")
	resync := flag.Duration("resync", 0, "--resync of convoy-apiserver, which starts the resync round; it must come after the other two rounds (default: 2m + 200ms per Release)")
	maxAge := flag.Duration("cache-max-age", 0, "--cache-max-age of convoy-apiserver, which only the cache-on instance uses (default: 10m, or --resync + 5m when that is longer, so that the resync round measures passes within it, not the periodic refresh)")
	costsOnly := flag.Bool("costs-only", false, "measure only kube-apiserver's CPU per request of each kind (on the fleet, without convoy-apiserver), no rounds")
	baselineBin := flag.String("baseline", "", "another convoy-apiserver binary (an earlier build) to run first, with the cache on, on the same fleet")
	modes := flag.String("cache-modes", "off,on", "the instances to run, in order: off (--cache=false), on (--cache=true), or both")
	cpuProfile := flag.String("cpu-profile", "", "take CPU profiles of convoy-apiserver and kube-apiserver from the start of each spec-changed round, into this file prefix")
	profileSeconds := flag.Int("cpu-profile-seconds", 60, "how long the CPU profiles of --cpu-profile last")
	memLimit := flag.String("gomemlimit", "", "GOMEMLIMIT of convoy-apiserver (e.g. 270MiB: what the Deployment sets from a 300Mi memory limit, less a margin); empty: none")
	flag.Parse()
	if *binDir == "" {
		return fmt.Errorf("--bin-dir is required")
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "convoy-bench-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	var out io.Writer = io.Discard
	if *verbose {
		out = os.Stderr
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: dir, BinDir: *binDir,
		CRDDir:          filepath.Join(root, "artifacts/crds"),
		ManifestDirs:    []string{filepath.Join(root, "artifacts/rbac")},
		ConvoyAPIServer: *convoyBin,
		DeferConvoy:     true, // started once the fleet exists, once per mode
		ConvoyEnv:       convoyEnv(*memLimit),
		Out:             out,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()

	f, err := newFleet(cp, *releases)
	if err != nil {
		return err
	}
	began := time.Now()
	if err := f.create(ctx); err != nil {
		return err
	}
	drifted, err := f.drift(ctx, *driftPercent)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench-fleet: %d Releases, %d objects created in %s; %d objects of %d Releases drifted\n",
		*releases, *releases*objectsPerRel, time.Since(began).Round(time.Second), len(drifted.objects), len(drifted.releases))

	if *resync == 0 {
		*resync = 2*time.Minute + time.Duration(*releases)*200*time.Millisecond
	}
	if *maxAge == 0 {
		*maxAge = max(10*time.Minute, *resync+5*time.Minute)
	}
	fmt.Fprintf(os.Stderr, "bench-fleet: --resync=%s, --cache-max-age=%s\n", resync, maxAge)
	type instance struct {
		binary string // "": --convoy-apiserver
		cache  bool
		mode   string
	}
	var instances []instance
	if *baselineBin != "" {
		instances = append(instances, instance{binary: *baselineBin, cache: true, mode: "baseline, cache on"})
	}
	for _, m := range strings.Split(*modes, ",") {
		switch m {
		case "off", "on":
			instances = append(instances, instance{cache: m == "on", mode: "cache " + m})
		default:
			return fmt.Errorf("--cache-modes: %q is neither off nor on", m)
		}
	}
	var rows []row
	for i, in := range instances {
		if *costsOnly {
			break
		}
		cache, mode := in.cache, in.mode
		// The cold round starts with the process: its counters are zero.
		kas, err := f.kasRequests(ctx)
		if err != nil {
			return err
		}
		start := baseline{at: time.Now(), kasCPU: controlplane.CPUSeconds(cp.KubeAPIServerPID()), kas: kas}
		args := []string{"--cache=" + strconv.FormatBool(cache), "--leader-elect=false", "--resync=" + resync.String(), "--cache-max-age=" + maxAge.String()}
		var convoy *controlplane.ConvoyProcess
		if in.binary != "" {
			convoy, err = cp.StartConvoyAPIServerFrom(ctx, in.binary, args...)
		} else {
			convoy, err = cp.StartConvoyAPIServer(ctx, args...)
		}
		if err != nil {
			return err
		}
		cold, err := f.round(ctx, convoy, mode+", cold", *timeout, &start, nil)
		if err != nil {
			return err
		}
		var profiles *cpuProfiles
		trigger := f.touch
		if *cpuProfile != "" {
			trigger = func(ctx context.Context) error {
				profiles = f.startCPUProfiles(ctx, convoy, fmt.Sprintf("%s-%d-cache-%t", *cpuProfile, i, cache), *profileSeconds)
				return f.touch(ctx)
			}
		}
		steady, err := f.round(ctx, convoy, mode+", spec changed", *timeout, nil, trigger)
		if err != nil {
			return err
		}
		if profiles != nil {
			if err := profiles.wait(); err != nil {
				return err
			}
		}
		steady.patches = *releases
		// The informer resync: a pass of every Release, nothing changed at
		// all (neither the cluster nor a spec).
		if time.Since(start.at) > *resync {
			// What was measured is printed: a large fleet takes an hour
			// to create.
			printTable(*releases, append(rows, cold, steady))
			return fmt.Errorf("the resync came before the first two rounds ended (the spec-changed round may hold resync passes): raise --resync")
		}
		resyncStart, err := f.firstPass(ctx, convoy, start.at.Add(*resync))
		if err != nil {
			return err
		}
		resynced, err := f.round(ctx, convoy, mode+", resync", *timeout, resyncStart, nil)
		if err != nil {
			return err
		}
		if *heap != "" {
			if err := f.saveProfile(convoy, "heap?gc=1", fmt.Sprintf("%s-%d-cache-%t.pprof", *heap, i, cache)); err != nil {
				return err
			}
			if err := f.saveProfile(convoy, "goroutine?debug=1", fmt.Sprintf("%s-%d-cache-%t.goroutines.txt", *heap, i, cache)); err != nil {
				return err
			}
		}
		if err := convoy.Stop(); err != nil {
			return err
		}
		for _, r := range []row{cold, steady, resynced} {
			if r.drifted != len(drifted.releases) || r.inSync != *releases-len(drifted.releases) {
				return fmt.Errorf("%s: %d Drifted and %d InSync, want %d and %d", r.name, r.drifted, r.inSync, len(drifted.releases), *releases-len(drifted.releases))
			}
		}
		rows = append(rows, cold, steady, resynced)
	}
	c, err := f.measureCosts(ctx)
	if err != nil {
		return fmt.Errorf("measuring the cost of each kind of request: %w", err)
	}
	if len(rows) > 0 {
		printTable(*releases, rows)
		printRequestLog(*releases, rows)
	}
	c.print(rows)
	return nil
}

// convoyEnv is the environment of convoy-apiserver: GOMEMLIMIT when set.
func convoyEnv(memLimit string) []string {
	if memLimit == "" {
		return nil
	}
	fmt.Fprintf(os.Stderr, "bench-fleet: convoy-apiserver runs with GOMEMLIMIT=%s\n", memLimit)
	return []string{"GOMEMLIMIT=" + memLimit}
}

// fleet is the Releases of the benchmark.
type fleet struct {
	cp      *controlplane.ControlPlane
	n       int
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	convoy  convoyclient.Interface
	touches int
	scraper *http.Client
	// profiler is scraper without its timeout, for CPU profiles.
	profiler *http.Client
}

func newFleet(cp *controlplane.ControlPlane, n int) (*fleet, error) {
	cfg := cp.AdminConfig()
	cfg.QPS, cfg.Burst = 2000, 4000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	convoy, err := convoyclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cp.AdminConfig())
	if err != nil {
		return nil, err
	}
	tlsConfig.RootCAs, tlsConfig.InsecureSkipVerify = nil, true // convoy-apiserver's own serving certificate
	transport := &http.Transport{TLSClientConfig: tlsConfig}
	scraper := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	return &fleet{cp: cp, n: n, kube: kube, dyn: dyn, convoy: convoy, scraper: scraper, profiler: &http.Client{Transport: transport}}, nil
}

// objects returns the 20 objects of Release i.
func objects(i int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for j := range configMapsPerRel {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("r%d-cm%d", i, j), "namespace": namespace},
			"data":     map[string]any{"release": strconv.Itoa(i), "index": strconv.Itoa(j), "color": "blue"},
		}})
	}
	for j := range servicesPerRel {
		app := fmt.Sprintf("r%d-app%d", i, j)
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": app, "namespace": namespace},
			"spec": map[string]any{"selector": map[string]any{"app": app},
				"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http"}}},
		}}, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": app, "namespace": namespace, "labels": map[string]any{"app": app}},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": map[string]any{"app": app}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": app}},
					"spec": map[string]any{"containers": []any{map[string]any{
						"name": "app", "image": "registry.example/app:1." + strconv.Itoa(i),
						"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
					}}},
				},
			},
		}})
	}
	return out
}

var resources = map[string]schema.GroupVersionResource{
	"ConfigMap":  {Version: "v1", Resource: "configmaps"},
	"Service":    {Version: "v1", Resource: "services"},
	"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
}

// parallel runs f(i) for i in [0, n) on 32 workers.
func parallel(n int, f func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d errors, the first: %w", len(errs), errs[0])
	}
	return nil
}

// create makes the namespace, the identity's rights, and for each Release its
// source ConfigMap, its applied objects (manager convoy) and the Release.
func (f *fleet) create(ctx context.Context) error {
	if _, err := f.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := f.cp.GrantServiceAccounts(ctx, namespace); err != nil {
		return err
	}
	if err := f.cp.AllowImpersonation(ctx, namespace); err != nil {
		return err
	}
	return parallel(f.n, func(i int) error {
		objs := objects(i)
		var manifest strings.Builder
		for _, o := range objs {
			data, err := json.Marshal(o.Object)
			if err != nil {
				return err
			}
			manifest.WriteString("---\n")
			manifest.Write(data)
			manifest.WriteString("\n")
			if _, err := f.dyn.Resource(resources[o.GetKind()]).Namespace(namespace).Apply(ctx, o.GetName(), o,
				metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true}); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("r%d", i)
		if _, err := f.kube.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-manifests"}, Data: map[string]string{"objects.yaml": manifest.String()},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := f.convoy.ConvoyV1alpha1().Releases(namespace).Create(ctx, &convoyv1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: convoyv1alpha1.ReleaseSpec{
				Source:     convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: name + "-manifests"}},
				SyncPolicy: convoyv1alpha1.SyncPolicy{Interval: &metav1.Duration{Duration: time.Hour}},
			},
		}, metav1.CreateOptions{})
		return err
	})
}

// drifted is what drift changed.
type drifted struct {
	objects  []string
	releases map[int]bool
}

// drift changes percent of the objects with another field manager: the data
// of a ConfigMap, the replicas of a Deployment.
func (f *fleet) drift(ctx context.Context, percent float64) (drifted, error) {
	d := drifted{releases: map[int]bool{}}
	total := f.n * objectsPerRel
	count := int(float64(total) * percent / 100)
	if count == 0 {
		count = 1
	}
	step := total / count
	for k := range count {
		i, j := (k*step)/objectsPerRel, (k*step)%objectsPerRel
		o := objects(i)[j]
		patch := `{"data":{"color":"red"}}`
		if o.GetKind() == "Deployment" {
			patch = `{"spec":{"replicas":3}}`
		} else if o.GetKind() == "Service" {
			patch = `{"spec":{"ports":[{"name":"http","port":81,"targetPort":"http"}]}}`
		}
		if _, err := f.dyn.Resource(resources[o.GetKind()]).Namespace(namespace).Patch(ctx, o.GetName(), types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
			return d, err
		}
		d.objects = append(d.objects, o.GetKind()+"/"+o.GetName())
		d.releases[i] = true
	}
	return d, nil
}

// touch makes a harmless change to the spec of every Release: another
// interval each time.
func (f *fleet) touch(ctx context.Context) error {
	f.touches++
	patch := fmt.Sprintf(`{"spec":{"syncPolicy":{"interval":"%dm"}}}`, 60-f.touches)
	return parallel(f.n, func(i int) error {
		_, err := f.convoy.ConvoyV1alpha1().Releases(namespace).Patch(ctx, fmt.Sprintf("r%d", i), types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{})
		return err
	})
}

// firstPass waits for the first drift pass of the resync (nothing starts
// it but the informer's timer, due at resyncAt or a little later) and
// returns the start of its round: the counters just before it. It scrapes
// every 2s until 30s before resyncAt, then every 50ms: a scrape of 5,000
// Releases' condition series is work for convoy-apiserver, which a
// benchmark must not add to what it measures.
func (f *fleet) firstPass(ctx context.Context, p *controlplane.ConvoyProcess, resyncAt time.Time) (*baseline, error) {
	last, err := f.scrape(p)
	if err != nil {
		return nil, err
	}
	// kube-apiserver's counters are read once, when the scrapes quicken:
	// the fleet is quiet until the resync (an interval of an hour).
	var kas map[string]float64
	for {
		if kas == nil && time.Until(resyncAt) <= 30*time.Second {
			if kas, err = f.kasRequests(ctx); err != nil {
				return nil, err
			}
		}
		kasCPU, conv := controlplane.CPUSeconds(f.cp.KubeAPIServerPID()), controlplane.CPUSeconds(p.PID())
		now, err := f.scrape(p)
		if err != nil {
			return nil, err
		}
		if now.passes > last.passes {
			if kas == nil { // a first pass before resyncAt
				return nil, fmt.Errorf("a drift pass came %s before the resync", time.Until(resyncAt).Round(time.Second))
			}
			return &baseline{at: time.Now(), kasCPU: kasCPU, convCPU: conv, before: last, kas: kas}, nil
		}
		last = now
		if time.Until(resyncAt) > 30*time.Second {
			time.Sleep(2 * time.Second)
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// saveProfile writes the profile of p at /debug/pprof/PROFILE (e.g.
// "heap?gc=1", or "goroutine?debug=1" for text) to path.
func (f *fleet) saveProfile(p *controlplane.ConvoyProcess, profile, path string) error {
	resp, err := f.scraper.Get(p.URL() + "/debug/pprof/" + profile)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = io.Copy(out, resp.Body)
	return err
}

// row is the figures of one round.
type row struct {
	name            string
	took            time.Duration
	requests        map[string]float64 // target requests by operation
	own             float64            // requests to the own cluster (status, Events, inputs, ...)
	patches         int                // spec patches the benchmark sent in the round
	kasCPU, convCPU float64            // seconds
	peakMemory      int64
	drifted, inSync int
	kas             map[string]float64 // kube-apiserver's requests in the round, by kasRequests key
}

// baseline is where a round starts.
type baseline struct {
	at              time.Time
	kasCPU, convCPU float64
	before          metrics
	kas             map[string]float64 // kube-apiserver's request counters
}

// round waits until every Release had one more drift pass and reads the
// figures of the round. It starts at start, when set (a cold round, from the
// launch of the process), else now, and then calls trigger, when set.
func (f *fleet) round(ctx context.Context, p *controlplane.ConvoyProcess, name string, timeout time.Duration, start *baseline, trigger func(context.Context) error) (row, error) {
	r := row{name: name}
	if start == nil {
		before, err := f.scrape(p)
		if err != nil {
			return r, err
		}
		kas, err := f.kasRequests(ctx)
		if err != nil {
			return r, err
		}
		start = &baseline{at: time.Now(), kasCPU: controlplane.CPUSeconds(f.cp.KubeAPIServerPID()), convCPU: controlplane.CPUSeconds(p.PID()), before: before, kas: kas}
	}
	before, kas0, conv0 := start.before, start.kasCPU, start.convCPU
	if before.target == nil {
		before.target = map[string]float64{}
	}
	if trigger != nil {
		if err := trigger(ctx); err != nil {
			return r, err
		}
	}
	deadline := start.at.Add(timeout)
	var (
		after metrics
		err   error
	)
	for {
		if after, err = f.scrape(p); err != nil {
			return r, err
		}
		if after.passes-before.passes >= float64(f.n) {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%s: %v passes of %d in %s", name, after.passes-before.passes, f.n, timeout)
		}
		// A round's time to about 2%: scrapes are work for convoy-apiserver.
		time.Sleep(min(max(time.Since(start.at)/50, 100*time.Millisecond), 2*time.Second))
	}
	r.took = time.Since(start.at)
	r.kasCPU, r.convCPU = controlplane.CPUSeconds(f.cp.KubeAPIServerPID())-kas0, controlplane.CPUSeconds(p.PID())-conv0
	r.peakMemory = peakMemory(p.PID())
	r.requests = map[string]float64{}
	for op, v := range after.target {
		r.requests[op] = v - before.target[op]
	}
	r.own = after.own - before.own
	kas, err := f.kasRequests(ctx)
	if err != nil {
		return r, err
	}
	r.kas = map[string]float64{}
	for k, v := range kas {
		r.kas[k] = v - start.kas[k]
	}
	list, err := f.convoy.ConvoyV1alpha1().Releases(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, err
	}
	for _, rel := range list.Items {
		for _, c := range rel.Status.Conditions {
			if c.Type == convoyv1alpha1.ConditionInSync && c.Reason == "Drifted" {
				r.drifted++
			} else if c.Type == convoyv1alpha1.ConditionInSync && c.Reason == "InSync" {
				r.inSync++
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench-fleet: %s: %s\n", name, r.took.Round(time.Millisecond))
	if lists := after.lists - before.lists; lists > 0 || after.snapshot["one_by_one"] > before.snapshot["one_by_one"] {
		fmt.Fprintf(os.Stderr, "bench-fleet: %s: asks for shared LISTs: %.0f listed, %.0f shared, %.0f one by one; %.0f LIST errors; a LIST took %.2f s on average\n",
			name, after.snapshot["listed"]-before.snapshot["listed"], after.snapshot["shared"]-before.snapshot["shared"],
			after.snapshot["one_by_one"]-before.snapshot["one_by_one"], after.listErrors-before.listErrors,
			(after.listedSeconds-before.listedSeconds)/max(lists, 1))
	}
	for _, choice := range []string{"list", "one_by_one"} {
		if n := after.windows[choice] - before.windows[choice]; n > 0 {
			fmt.Fprintf(os.Stderr, "bench-fleet: %s: %.0f windows chose %s, at a GET priced %.1f listed items on average\n",
				name, n, choice, (after.windowPrice[choice]-before.windowPrice[choice])/n)
		}
	}
	return r, nil
}

// metrics are the counters of convoy-apiserver a round reads.
type metrics struct {
	passes float64            // drift passes
	target map[string]float64 // target requests by operation
	own    float64            // client-go requests to the own cluster
	// asks for shared LISTs by result, and the LISTs' errors, count and
	// seconds in all
	snapshot                         map[string]float64
	listErrors, lists, listedSeconds float64
	// the windows of shared LISTs by choice (list, one_by_one): how many,
	// and the sum of the GET prices they chose with
	windows, windowPrice map[string]float64
}

var (
	passLine   = regexp.MustCompile(`(?m)^convoy_observer_pass_results_total\{loop="drift"[^}]*\} (\S+)$`)
	targetLine = regexp.MustCompile(`(?m)^convoy_target_requests_total\{[^}]*operation="([a-z_]+)"[^}]*\} (\S+)$`)
	ownLine    = regexp.MustCompile(`(?m)^rest_client_requests_total\{[^}]*\} (\S+)$`)
	lookupLine = regexp.MustCompile(`(?m)^convoy_snapshot_lookups_total\{result="([a-z_]+)"\} (\S+)$`)
	listLine   = regexp.MustCompile(`(?m)^convoy_snapshot_(list_errors_total|list_duration_seconds_count|list_duration_seconds_sum) (\S+)$`)
	windowLine = regexp.MustCompile(`(?m)^convoy_snapshot_window_get_cost_items_(count|sum)\{choice="([a-z_]+)"[^}]*\} (\S+)$`)
)

// scrape reads /metrics of p, as the admin.
func (f *fleet) scrape(p *controlplane.ConvoyProcess) (metrics, error) {
	m := metrics{target: map[string]float64{}, snapshot: map[string]float64{}, windows: map[string]float64{}, windowPrice: map[string]float64{}}
	resp, err := f.scraper.Get(p.URL() + "/metrics")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return m, err
	}
	text := string(body)
	for _, g := range passLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(g[1], 64)
		m.passes += v
	}
	for _, g := range targetLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(g[2], 64)
		m.target[g[1]] += v
	}
	for _, g := range lookupLine.FindAllStringSubmatch(text, -1) {
		m.snapshot[g[1]], _ = strconv.ParseFloat(g[2], 64)
	}
	for _, g := range listLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(g[2], 64)
		switch g[1] {
		case "list_errors_total":
			m.listErrors = v
		case "list_duration_seconds_count":
			m.lists = v
		default:
			m.listedSeconds = v
		}
	}
	for _, g := range windowLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(g[3], 64)
		if g[1] == "count" {
			m.windows[g[2]] += v
		} else {
			m.windowPrice[g[2]] += v
		}
	}
	var all float64
	for _, g := range ownLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(g[1], 64)
		all += v
	}
	// client-go counts the target requests of the local cluster too.
	var target float64
	for _, v := range m.target {
		target += v
	}
	m.own = all - target
	return m, nil
}

// peakMemory is the peak resident memory of process pid, in bytes.
func peakMemory(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func printTable(n int, rows []row) {
	objs := float64(n * objectsPerRel)
	fmt.Printf("\n%d Releases × %d objects (%d ConfigMaps, %d Services, %d Deployments) in one namespace:\n\n",
		n, objectsPerRel, configMapsPerRel, servicesPerRel, servicesPerRel)
	fmt.Println("| round | time | requests/object: read, list, dry run, discovery | total/object | own-cluster requests | kube-apiserver CPU | convoy-apiserver CPU | convoy-apiserver peak memory | Drifted / InSync |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		var total float64
		for _, v := range r.requests {
			total += v
		}
		fmt.Printf("| %s | %s | %.3f, %.3f, %.3f, %.3f | %.3f | %.0f | %.1f s | %.1f s | %d MiB | %d / %d |\n",
			r.name, r.took.Round(100*time.Millisecond), r.requests["read"]/objs, r.requests["list"]/objs, r.requests["dry_run"]/objs,
			r.requests["discovery"]/objs, total/objs, r.own, r.kasCPU, r.convCPU, r.peakMemory>>20, r.drifted, r.inSync)
	}
}
