// Command bench-view measures the list page of `kubectl convoy view` for a
// namespace of --releases Releases on a local control plane, against what a
// user would otherwise run for the same namespace, in the same run:
// `kubectl get releases` and `kubectl convoy release list`. It reports the
// median and slowest time of each way, their ratio, and the LIST requests
// the API server counted per page (apiserver_request_total).
//
//	make bench-view [RELEASES=1000]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
)

const namespace = "fleet"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-view:", err)
		os.Exit(1)
	}
}

func run() error {
	binDir := flag.String("bin-dir", "", "directory with etcd, kube-apiserver and kubectl (hack/testbin.sh)")
	plugin := flag.String("kubectl-convoy", "bin/kubectl-convoy", "kubectl-convoy binary")
	releases := flag.Int("releases", 1000, "Releases in the namespace")
	runs := flag.Int("runs", 10, "measured runs of each way (after one to warm up)")
	flag.Parse()
	if *binDir == "" {
		return fmt.Errorf("--bin-dir is required")
	}
	pluginPath, err := filepath.Abs(*plugin)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "convoy-bench-view-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Only the CRDs: the list page reads Releases, nothing of convoy-apiserver.
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: dir, BinDir: *binDir,
		CRDDir: filepath.Join(root, "artifacts/crds"),
		Out:    os.Stderr,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	if err := fill(ctx, cp, *releases); err != nil {
		return err
	}

	// The plugin on PATH, as kubectl finds it.
	pathDir := filepath.Join(dir, "path")
	if err := os.MkdirAll(pathDir, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(pluginPath, filepath.Join(pathDir, "kubectl-convoy")); err != nil {
		return err
	}
	kubectlEnv := append(os.Environ(),
		"KUBECONFIG="+cp.AdminKubeconfig(),
		"KUBECACHEDIR="+filepath.Join(dir, "kubectl-cache"),
		"PATH="+pathDir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	kubectl := filepath.Join(*binDir, "kubectl")
	command := func(args ...string) func() error {
		return func() error {
			c := exec.CommandContext(ctx, kubectl, args...)
			c.Env = kubectlEnv
			out, err := c.CombinedOutput()
			if err != nil {
				return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, tail(string(out)))
			}
			return nil
		}
	}

	pageURL, stop, err := startView(ctx, kubectl, kubectlEnv)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Timeout: time.Minute}
	page := func() error {
		res, err := client.Get(pageURL)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("list page: HTTP %d: %s", res.StatusCode, tail(string(body)))
		}
		if n := strings.Count(string(body), `<a class="release"`); n != *releases {
			return fmt.Errorf("list page: %d rows, want %d", n, *releases)
		}
		return nil
	}

	listsBefore, err := listRequests(ctx, cp)
	if err != nil {
		return err
	}
	viewTimes, err := measure(*runs, page)
	if err != nil {
		return err
	}
	listsAfter, err := listRequests(ctx, cp)
	if err != nil {
		return err
	}
	getTimes, err := measure(*runs, command("get", "releases", "-n", namespace))
	if err != nil {
		return err
	}
	pluginTimes, err := measure(*runs, command("convoy", "release", "list", "-n", namespace))
	if err != nil {
		return err
	}

	fmt.Printf("\nThe list of %d Releases in one namespace, %d runs each after one to warm up (%s, %d CPUs)\n", *releases, *runs, time.Now().UTC().Format("2006-01-02"), runtime.NumCPU())
	fmt.Printf("%-46s %10s %10s %8s\n", "way", "median", "slowest", "ratio")
	row := func(name string, d []time.Duration) {
		fmt.Printf("%-46s %10s %10s %7.2fx\n", name, median(d).Round(time.Millisecond), slices.Max(d).Round(time.Millisecond),
			float64(median(d))/float64(median(viewTimes)))
	}
	row("kubectl convoy view: GET of the list page", viewTimes)
	row("kubectl get releases (peer)", getTimes)
	row("kubectl convoy release list", pluginTimes)
	fmt.Printf("LIST requests of releases per page: %.1f (pages of 500)\n", float64(listsAfter-listsBefore)/float64(*runs+1))
	return nil
}

// fill creates n Releases with a status as the observer and the controller
// write it: conditions, the last render applied, the revision resolved.
func fill(ctx context.Context, cp *controlplane.ControlPlane, n int) error {
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	cfg := cp.AdminConfig()
	cfg.QPS, cfg.Burst = 200, 400
	convoy, err := convoyclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	now := metav1.Now()
	return parallel(16, n, func(i int) error {
		name := fmt.Sprintf("app-%05d", i)
		r, err := convoy.ConvoyV1alpha1().Releases(namespace).Create(ctx, &convoyv1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "t" + strconv.Itoa(i%10)}},
			Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{
				URL: "https://git.example.test/apps.git", Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "apps/" + name,
			}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		inSync, reason := metav1.ConditionTrue, "InSync"
		if i%7 == 0 {
			inSync, reason = metav1.ConditionFalse, "Drifted"
		}
		r.Status = convoyv1alpha1.ReleaseStatus{
			ObservedGeneration: r.Generation,
			Conditions: []metav1.Condition{
				{Type: convoyv1alpha1.ConditionInSync, Status: inSync, Reason: reason, Message: "render " + fmt.Sprintf("%016x", i) + " (Fresh): Deployment.apps fleet/" + name + ": spec.replicas", ObservedGeneration: r.Generation, LastTransitionTime: now},
				{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "3 objects healthy", ObservedGeneration: r.Generation, LastTransitionTime: now},
			},
			LastApplied:  &convoyv1alpha1.RenderRecord{RenderRef: fmt.Sprintf("%016x", i), Time: now},
			LastResolved: &convoyv1alpha1.LastResolved{Kind: "GitRepository", URL: "https://git.example.test/apps.git", Ref: "refs/heads/main", Commit: fmt.Sprintf("%040x", i), Time: now},
		}
		_, err = convoy.ConvoyV1alpha1().Releases(namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{})
		return err
	})
}

// startView runs `kubectl convoy view -n fleet --no-open` and returns the URL
// it printed.
func startView(ctx context.Context, kubectl string, env []string) (string, func(), error) {
	c := exec.CommandContext(ctx, kubectl, "convoy", "view", "-n", namespace, "--no-open")
	c.Env = env
	c.Stderr = os.Stderr
	out, err := c.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := c.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = c.Process.Kill(); _ = c.Wait() }
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/s/[A-Za-z0-9_-]+/\S*`).FindString(sc.Text()); u != "" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return u, stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("kubectl convoy view printed no URL")
}

// listRequests is the count of LIST requests of releases the API server
// answered.
func listRequests(ctx context.Context, cp *controlplane.ControlPlane) (int64, error) {
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return 0, err
	}
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="releases"`) ||
			!strings.Contains(line, `verb="LIST"`) || strings.Contains(line, `subresource="`) && !strings.Contains(line, `subresource=""`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		total += int64(v)
	}
	return total, nil
}

// measure runs f once to warm up, then runs times.
func measure(runs int, f func() error) ([]time.Duration, error) {
	if err := f(); err != nil {
		return nil, err
	}
	var times []time.Duration
	for range runs {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func parallel(workers, n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func tail(s string) string {
	if len(s) > 400 {
		return "..." + s[len(s)-400:]
	}
	return s
}
