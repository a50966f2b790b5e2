//go:build unix

package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The tests need the binaries of hack/testbin.sh:
//
//	CONVOY_TESTBIN=$(hack/testbin.sh) go test ./internal/controlplane/
//
// For the aggregation test the test binary doubles as a fake convoy-apiserver
// (see fakeConvoy below), started by the control plane like the real one.

const fakeConvoyEnv = "CONTROLPLANE_TEST_FAKE_CONVOY"

func TestMain(m *testing.M) {
	if os.Getenv(fakeConvoyEnv) == "1" {
		if err := fakeConvoy(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fake convoy-apiserver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func binDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONVOY_TESTBIN")
	if dir == "" {
		t.Skip("CONVOY_TESTBIN is not set (directory with etcd, kube-apiserver, kubectl: run hack/testbin.sh)")
	}
	return dir
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.convoy.test
spec:
  group: example.convoy.test
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// manifests writes files into a new directory and returns it.
func manifests(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func start(t *testing.T, o Options) *ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func kubectl(t *testing.T, c *ControlPlane, stdin string, args ...string) string {
	t.Helper()
	cmd := c.Kubectl(args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// assertStopped checks that Stop left neither the given processes nor any
// process whose command line mentions dir.
func assertStopped(t *testing.T, dir string, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
		}
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		cmdline, err := os.ReadFile(f)
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("stray process %s: %s", filepath.Base(filepath.Dir(f)), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func (c *ControlPlane) pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

func TestControlPlane(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	var out bytes.Buffer
	c := start(t, Options{
		Dir:    dir,
		BinDir: bin,
		CRDDir: manifests(t, map[string]string{"widgets.yaml": widgetCRD}),
		ManifestDirs: []string{manifests(t, map[string]string{
			"00-namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n",
			// A custom resource right after its CRD: kubectl must see the new kind.
			"10-widget.yaml": "apiVersion: example.convoy.test/v1\nkind: Widget\nmetadata: {name: w1, namespace: demo}\nspec: {size: 3}\n",
		})},
		Out: &out,
	})
	t.Log(out.String())
	if got := c.ConvoyAPIServer(); got != nil {
		t.Errorf("ConvoyAPIServer() = %v without a binary, want nil", got)
	}

	t.Run("kubectl version", func(t *testing.T) {
		var v struct {
			ServerVersion struct{ GitVersion string } `json:"serverVersion"`
		}
		if err := json.Unmarshal([]byte(kubectl(t, c, "", "version", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.ServerVersion.GitVersion != "v1.37.2" {
			t.Errorf("server version %q, want v1.37.2", v.ServerVersion.GitVersion)
		}
	})

	t.Run("manifests applied", func(t *testing.T) {
		if got := strings.TrimSpace(kubectl(t, c, "", "get", "widgets", "-n", "demo", "-o", "name")); got != "widget.example.convoy.test/w1" {
			t.Errorf("widgets: %q", got)
		}
	})

	t.Run("admin kubeconfig file", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("user kubeconfig", func(t *testing.T) {
		ctx := context.Background()
		path, cfg, err := c.UserKubeconfig("alice", "devs", "qa")
		if err != nil {
			t.Fatal(err)
		}
		alice := kubernetes.NewForConfigOrDie(cfg)
		ssr, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := ssr.Status.UserInfo; u.Username != "alice" || !contains(u.Groups, "devs") || !contains(u.Groups, "qa") {
			t.Errorf("alice is %+v", u)
		}
		_, err = alice.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("alice lists secrets: err = %v, want Forbidden", err)
		}
		if _, err := kubernetes.NewForConfigOrDie(c.AdminConfig()).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("admin lists secrets: %v", err)
		}
		// The file works as well.
		cmd := c.kubectlFor(path, "get", "secrets", "-n", "kube-system")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "forbidden") {
			t.Errorf("kubectl as alice: err = %v, output %s", err, out)
		}
	})

	t.Run("stop", func(t *testing.T) {
		pids := c.pids()
		if len(pids) != 2 {
			t.Errorf("%d processes, want etcd and kube-apiserver", len(pids))
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := c.Stop(); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		assertStopped(t, dir, pids)
		if _, err := c.StartConvoyAPIServer(context.Background()); err == nil {
			t.Error("StartConvoyAPIServer after Stop succeeded")
		}
	})
}

func TestStartFailureStopsEverything(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	_, err := Start(context.Background(), Options{
		Dir:          dir,
		BinDir:       bin,
		ManifestDirs: []string{manifests(t, map[string]string{"bad.yaml": "apiVersion: v1\nkind: NoSuchKind\nmetadata: {name: x}\n"})},
	})
	if err == nil {
		t.Fatal("Start succeeded with a bad manifest")
	}
	t.Logf("Start: %v", err)
	assertStopped(t, dir, nil)
}

func TestConvoyRegistration(t *testing.T) {
	bin := binDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeConvoyEnv, "1") // inherited by the children: the test binary acts as convoy-apiserver
	dir := t.TempDir()
	var out bytes.Buffer
	c := start(t, Options{
		Dir:             dir,
		BinDir:          bin,
		ConvoyAPIServer: exe,
		ConvoyArgs:      []string{"--fake-name=first"},
		Out:             &out,
	})
	t.Log(out.String())
	first := c.ConvoyAPIServer()
	if first == nil {
		t.Fatal("ConvoyAPIServer() = nil")
	}
	log, _ := os.ReadFile(first.LogFile())
	if !bytes.Contains(log, []byte("authenticated as system:serviceaccount:convoy-system:convoy-apiserver")) {
		t.Errorf("convoy-apiserver did not authenticate with its token; log:\n%s", log)
	}

	const group = "/apis/subresources.convoy.kumodo.io/v1alpha1"
	if got := kubectl(t, c, "", "get", "--raw", group); !strings.Contains(got, "releases/sync") {
		t.Errorf("discovery through the aggregator: %s", got)
	}
	sync := func(t *testing.T) fakeSync {
		t.Helper()
		var s fakeSync
		got := kubectl(t, c, "{}", "create", "--raw", group+"/namespaces/demo/releases/podinfo/sync", "-f", "-")
		if err := json.Unmarshal([]byte(got), &s); err != nil {
			t.Fatalf("sync answer %q: %v", got, err)
		}
		return s
	}
	s := sync(t)
	if s.Replica != "first" || s.User != "admin" || s.ProxyCert != frontProxyClientName || s.Namespace != "demo" || s.Name != "podinfo" {
		t.Errorf("sync through the aggregator: %+v", s)
	}

	_, aliceCfg, err := c.UserKubeconfig("alice")
	if err != nil {
		t.Fatal(err)
	}
	err = kubernetes.NewForConfigOrDie(aliceCfg).CoreV1().RESTClient().Post().AbsPath(group, "namespaces/demo/releases/podinfo/sync").Body([]byte("{}")).Do(context.Background()).Error()
	if !apierrors.IsForbidden(err) {
		t.Errorf("alice syncs: err = %v, want Forbidden", err)
	}

	// A second replica takes over.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	second, err := c.StartConvoyAPIServer(ctx, "--fake-name=second")
	if err != nil {
		t.Fatal(err)
	}
	if second.Port() == first.Port() || second.LogFile() == first.LogFile() {
		t.Errorf("second replica shares port or log: %d %s", second.Port(), second.LogFile())
	}
	if err := c.RegisterAPIService(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if c.ConvoyAPIServer() != second {
		t.Error("ConvoyAPIServer() is not the registered replica")
	}
	if s := sync(t); s.Replica != "second" {
		t.Errorf("after the switch, sync reached %q", s.Replica)
	}

	pids := c.pids()
	if len(pids) != 4 {
		t.Errorf("%d processes, want etcd, kube-apiserver and two convoy-apiservers", len(pids))
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	assertStopped(t, dir, pids)
}

func TestConvoyNeverAvailable(t *testing.T) {
	bin := binDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeConvoyEnv, "1")
	defer func(d time.Duration) { apiServiceTimeout = d }(apiServiceTimeout)
	// Long enough for the aggregator to report the failure on a loaded machine
	// (the e2e package runs beside this one): the wait ends at the timeout.
	apiServiceTimeout = 45 * time.Second
	dir := t.TempDir()
	_, err = Start(context.Background(), Options{
		Dir:             dir,
		BinDir:          bin,
		ConvoyAPIServer: exe,
		ConvoyArgs:      []string{"--fake-broken-discovery"},
	})
	if err == nil {
		t.Fatal("Start succeeded with a convoy-apiserver whose discovery fails")
	}
	t.Logf("Start: %v", err)
	for _, want := range []string{"Available=False", "503", "last lines of", "failing discovery on purpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	assertStopped(t, dir, nil)
}

func TestTargetCluster(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	var out bytes.Buffer
	c := start(t, Options{Dir: dir, BinDir: bin, Out: &out})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	target, err := c.StartTargetCluster(ctx, "second")
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if target.URL() == c.AdminConfig().Host || target.Config().Host != target.URL() {
		t.Errorf("target URL %s, its config %s, the main cluster %s", target.URL(), target.Config().Host, c.AdminConfig().Host)
	}
	if _, err := c.StartTargetCluster(ctx, "second"); err == nil {
		t.Error("a second target cluster named second started")
	}
	if _, err := c.StartTargetCluster(ctx, "Not_A_Label"); err == nil {
		t.Error("a target cluster with an invalid name started")
	}

	t.Run("separate objects", func(t *testing.T) {
		mainClient := kubernetes.NewForConfigOrDie(c.AdminConfig())
		targetClient := kubernetes.NewForConfigOrDie(target.Config())
		for _, x := range []struct {
			in, notIn *kubernetes.Clientset
			name      string
		}{{targetClient, mainClient, "only-in-target"}, {mainClient, targetClient, "only-in-main"}} {
			if _, err := x.in.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: x.name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := x.in.CoreV1().Namespaces().Get(ctx, x.name, metav1.GetOptions{}); err != nil {
				t.Errorf("namespace %s: %v", x.name, err)
			}
			if _, err := x.notIn.CoreV1().Namespaces().Get(ctx, x.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s seen in the other cluster: err = %v, want NotFound", x.name, err)
			}
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		data := target.Kubeconfig()
		raw, err := clientcmd.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		for name, cl := range raw.Clusters {
			if cl.CertificateAuthority != "" || len(cl.CertificateAuthorityData) == 0 || cl.Server != target.URL() {
				t.Errorf("cluster %s of the kubeconfig: %+v", name, cl)
			}
		}
		for name, a := range raw.AuthInfos {
			if a.ClientCertificate != "" || a.ClientKey != "" || len(a.ClientCertificateData) == 0 || len(a.ClientKeyData) == 0 {
				t.Errorf("user %s of the kubeconfig is not self-contained", name)
			}
		}
		// The bytes alone, elsewhere, work with kubectl.
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := c.kubectlFor(path, "get", "namespace", "only-in-target", "-o", "name").CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != "namespace/only-in-target" {
			t.Errorf("kubectl with the kubeconfig bytes: err = %v, output %s", err, got)
		}
		got, err = target.Kubectl("get", "namespace", "only-in-main").CombinedOutput()
		if err == nil || !strings.Contains(string(got), "NotFound") {
			t.Errorf("target.Kubectl sees the main cluster's namespace: err = %v, output %s", err, got)
		}
		got, err = target.Kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").CombinedOutput()
		if err != nil || string(got) != "admin" {
			t.Errorf("kubectl auth whoami on the target: err = %v, output %s", err, got)
		}
		if target.KubeconfigPath() == c.AdminKubeconfig() {
			t.Errorf("the target shares the admin kubeconfig %s", c.AdminKubeconfig())
		}
		if onDisk, err := os.ReadFile(target.KubeconfigPath()); err != nil || !bytes.Equal(onDisk, data) {
			t.Errorf("KubeconfigPath does not hold Kubeconfig(): %v", err)
		}
	})

	t.Run("stop one target", func(t *testing.T) {
		third, err := c.StartTargetCluster(ctx, "third")
		if err != nil {
			t.Fatal(err)
		}
		if err := third.Stop(); err != nil {
			t.Fatal(err)
		}
		if got, err := third.Kubectl("get", "namespaces", "--request-timeout=5s").CombinedOutput(); err == nil {
			t.Errorf("a stopped target cluster answers: %s", got)
		}
		if got, err := target.Kubectl("get", "namespace", "only-in-target").CombinedOutput(); err != nil {
			t.Errorf("the other target cluster after the stop: %v: %s", err, got)
		}
		if got, err := c.Kubectl("get", "namespace", "only-in-main").CombinedOutput(); err != nil {
			t.Errorf("the main cluster after the stop: %v: %s", err, got)
		}
	})

	t.Run("control plane stop", func(t *testing.T) {
		pids := c.pids()
		if len(pids) != 4 {
			t.Errorf("%d processes, want etcd and three kube-apiservers", len(pids))
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		assertStopped(t, dir, pids)
		if got, err := target.Kubectl("get", "namespaces", "--request-timeout=5s").CombinedOutput(); err == nil {
			t.Errorf("the target cluster answers after Stop: %s", got)
		}
		if _, err := c.StartTargetCluster(context.Background(), "late"); err == nil {
			t.Error("StartTargetCluster after Stop succeeded")
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fakeSync is the answer of the fake convoy-apiserver to POST .../sync.
type fakeSync struct {
	Replica   string `json:"replica"`
	User      string `json:"user"`      // X-Remote-User set by the aggregator
	ProxyCert string `json:"proxyCert"` // CN of the aggregator's client certificate
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// fakeConvoy is a stand-in for convoy-apiserver: it takes the flags the control
// plane passes, checks its kubeconfig against the kube-apiserver, and serves
// /readyz, the discovery of the aggregated group and POST .../sync.
func fakeConvoy(args []string) error {
	fs := flag.NewFlagSet("fake-convoy-apiserver", flag.ContinueOnError)
	port := fs.Int("secure-port", 0, "")
	bind := fs.String("bind-address", "", "")
	certFile := fs.String("tls-cert-file", "", "")
	keyFile := fs.String("tls-private-key-file", "", "")
	kubeconfig := fs.String("kubeconfig", "", "")
	fs.String("authentication-kubeconfig", "", "")
	fs.String("authorization-kubeconfig", "", "")
	name := fs.String("fake-name", "", "")
	brokenDiscovery := fs.Bool("fake-broken-discovery", false, "")
	if err := fs.Parse(args); err != nil {
		return err
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	ssr, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("self subject review: %w", err)
	}
	fmt.Printf("authenticated as %s\n", ssr.Status.UserInfo.Username)

	const group = "/apis/subresources.convoy.kumodo.io/v1alpha1"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("GET "+group, func(w http.ResponseWriter, _ *http.Request) {
		if *brokenDiscovery {
			fmt.Println("failing discovery on purpose")
			http.Error(w, "broken on purpose", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "subresources.convoy.kumodo.io/v1alpha1",
			APIResources: []metav1.APIResource{
				{Name: "releases", Namespaced: true, Kind: "Release", Verbs: metav1.Verbs{}},
				{Name: "releases/sync", Namespaced: true, Kind: "ReleaseSync", Verbs: metav1.Verbs{"create"}},
			},
		})
	})
	mux.HandleFunc("POST "+group+"/namespaces/{ns}/releases/{name}/sync", func(w http.ResponseWriter, r *http.Request) {
		s := fakeSync{Replica: *name, User: r.Header.Get("X-Remote-User"), Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			s.ProxyCert = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(s)
	})
	srv := &http.Server{
		Addr:      fmt.Sprintf("%s:%d", *bind, *port),
		Handler:   mux,
		TLSConfig: &tls.Config{ClientAuth: tls.RequestClientCert},
	}
	fmt.Printf("serving on %s\n", srv.Addr)
	return srv.ListenAndServeTLS(*certFile, *keyFile)
}
