//go:build unix

// Command local-up runs convoy locally (what `make run` runs): a control
// plane with simulated Nodes, convoy-apiserver behind its APIService, the
// CRDs, RBAC and examples, an OCI registry and a Git server on 127.0.0.1 for
// the examples' sources, and the development stand-in of convoy's
// controller. It prints how to reach the cluster and runs until SIGINT or
// SIGTERM, then stops every process. What it starts: docs/users/local.md.
//
//	go run ./hack/local-up --bin-dir=$(hack/testbin.sh) --convoy-apiserver=bin/convoy-apiserver [-- convoy-apiserver flags]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/internal/standin"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// marker tells a directory that local-up may wipe from one it must not touch.
const marker = ".convoy-local-up"

// listFlag is a repeatable flag that also splits on commas; the first use
// replaces the default.
type listFlag struct {
	vals    []string
	touched bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }

func (l *listFlag) Set(v string) error {
	if !l.touched {
		l.vals, l.touched = nil, true
	}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			l.vals = append(l.vals, s)
		}
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run() error {
	defDir := os.Getenv("CONVOY_LOCAL_DIR")
	if defDir == "" {
		defDir = ".local"
	}
	manifests := listFlag{vals: []string{"artifacts/rbac", "artifacts/rules"}}
	dir := flag.String("dir", defDir, "working directory, wiped at start except its kubeconfig file; default from $CONVOY_LOCAL_DIR")
	binDir := flag.String("bin-dir", "", "directory with etcd, kube-apiserver and kubectl (output of hack/testbin.sh); required")
	convoy := flag.String("convoy-apiserver", "", "path of the convoy-apiserver binary; empty: run without it")
	crds := flag.String("crds", "artifacts/crds", "directory of CRD manifests, applied first; empty: none")
	flag.Var(&manifests, "manifests", "directories applied after the CRDs, in order (repeatable or comma-separated)")
	examples := flag.String("examples", "artifacts/examples", "directory applied last; skipped if missing")
	workloads := flag.Bool("workloads", true, "run kube-controller-manager, kube-scheduler and kwok, so that Deployments get Pods that become Ready")
	runStandIn := flag.Bool("standin", true, "run the development stand-in of convoy's controller, which applies the Releases")
	chartDir := flag.String("chart", "artifacts/charts/web", "chart directory pushed to a local OCI registry and released as demo/web (needs the examples); empty: no registry")
	gitDir := flag.String("git-example", "artifacts/examples/kustomize", "directory committed to a Git repository served on 127.0.0.1 by git http-backend, whose overlays/prod is released as demo/podinfo-git (needs the examples); empty: no Git server")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] [-- convoy-apiserver flags]\n", filepath.Base(os.Args[0]))
		flag.PrintDefaults()
	}
	flag.Parse()
	if *binDir == "" {
		flag.Usage()
		return errors.New("--bin-dir is required")
	}
	if *convoy != "" {
		abs, err := filepath.Abs(*convoy)
		if err != nil {
			return err
		}
		*convoy = abs
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := prepareDir(absDir); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	convoyArgs := flag.Args()
	var registry *ociregistry.Server
	if *chartDir != "" {
		if registry, err = ociregistry.Start(ociregistry.Options{}); err != nil {
			return fmt.Errorf("starting the OCI registry: %w", err)
		}
		defer registry.Close()
		// The registry is on loopback, over plain http.
		convoyArgs = append([]string{"--allow-loopback-sources"}, convoyArgs...)
	}

	var gitServer *gitserver.Server
	var gitTree gitserver.Tree
	if *gitDir != "" {
		// Read first: a wrong directory fails before the control plane starts.
		if gitTree, err = gitserver.TreeFromDir(*gitDir); err != nil {
			return fmt.Errorf("reading the Git example: %w", err)
		}
		if *chartDir != "" {
			chartTree, err := gitserver.TreeFromDir(*chartDir)
			if err != nil {
				return fmt.Errorf("reading the example chart: %w", err)
			}
			for name, data := range chartTree.Files {
				gitTree.Files[path.Join(gitChartDir, name)] = data
			}
			// The values of demo/web-team-values, which takes the chart
			// from the OCI registry.
			gitTree = withTeamValues(gitTree)
		}
		if err := os.MkdirAll(filepath.Join(absDir, "git"), 0o755); err != nil {
			return err
		}
		if gitServer, err = gitserver.Start(gitserver.Options{Root: filepath.Join(absDir, "git")}); err != nil {
			return fmt.Errorf("starting the Git server: %w", err)
		}
		defer gitServer.Close()
		if *chartDir == "" {
			// The Git server is on loopback, over plain http.
			convoyArgs = append([]string{"--allow-loopback-sources"}, convoyArgs...)
		}
	}

	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir:             absDir,
		BinDir:          *binDir,
		CRDDir:          *crds,
		ManifestDirs:    manifests.vals,
		ConvoyAPIServer: *convoy,
		ConvoyArgs:      convoyArgs,
		Workloads:       *workloads,
		// Webhook deliveries on a port of their own (the Receiver demo/git-push).
		Receivers: true,
		Out:       os.Stderr,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "local-up: stopping")
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "local-up: stop:", err)
		}
	}()

	standInDone := make(chan error, 1)
	if *runStandIn {
		if err := startStandIn(ctx, cp, absDir, standInDone); err != nil {
			return err
		}
	}

	ns, name := "demo", "podinfo"
	if *examples != "" {
		if _, err := os.Stat(*examples); err == nil {
			if err := applyExamples(ctx, cp, *examples); err != nil {
				return err
			}
			if n, m, ok := firstRelease(ctx, cp); ok {
				ns, name = n, m
			}
		} else {
			fmt.Fprintf(os.Stderr, "local-up: no examples at %s, skipped\n", *examples)
			registry, gitServer = nil, nil
		}
	}
	var ociExample string
	var web *convoyv1alpha1.Release
	if registry != nil {
		if ociExample, web, err = releaseFromRegistry(ctx, cp, registry, *chartDir); err != nil {
			return err
		}
	}

	var gitExample string
	if gitServer != nil {
		if gitExample, err = releaseFromGit(ctx, cp, gitServer, filepath.Join(absDir, "git"), *gitDir, gitTree, web); err != nil {
			return err
		}
		if err := demoReceiver(ctx, cp); err != nil {
			// The rest of the demo goes on without it.
			fmt.Fprintln(os.Stderr, "local-up: the demo's Receiver:", err)
		}
	}

	kubeconfig := filepath.Join(absDir, "kubeconfig")
	if err := copyFile(cp.AdminKubeconfig(), kubeconfig); err != nil {
		return err
	}

	group := "/apis/subresources.convoy.kumodo.io/v1alpha1"
	fmt.Printf("\nconvoy is running locally (logs in %s).\n\n", filepath.Join(absDir, "logs"))
	fmt.Printf("export KUBECONFIG=%s\n\n", kubeconfig)
	fmt.Println("Try:")
	fmt.Println("  kubectl get releases -A")
	fmt.Printf("  kubectl get --raw %s\n", group)
	fmt.Printf("  kubectl create --raw %s/namespaces/%s/releases/%s/sync -f - <<<'{}'\n", group, ns, name)
	if *convoy == "" {
		fmt.Println("\n(convoy-apiserver was not started: --convoy-apiserver is empty, so the last two fail.)")
	}
	if *runStandIn {
		fmt.Printf("\nThe development stand-in of convoy's controller applies the Releases (log: %s).\n", filepath.Join(absDir, "logs", "standin.log"))
		fmt.Printf("Follow %s/%s with the plugin (bin/ on PATH): kubectl convoy release get %s -n %s\n", ns, name, name, ns)
		fmt.Printf("or in a browser: kubectl convoy view -n %s\n", ns)
	}
	if ociExample != "" {
		fmt.Printf("\nAn OCI registry serves the example chart at %s;\n", ociExample)
		fmt.Println("the Release demo/web takes it from there, once its signature verifies (spec.source.ociRepository.verify):")
		fmt.Println("kubectl convoy release get web -n demo")
		fmt.Println("and demo/web-keyless once its keyless signature does (a CI's identity, a Sigstore instance of this run):")
		fmt.Println("kubectl convoy release get web-keyless -n demo")
	}
	if gitExample != "" {
		fmt.Printf("\nGit's own server (git http-backend) serves the kustomize example at %s;\n", gitExample)
		fmt.Println("the Release demo/podinfo-git takes overlays/prod from there: kubectl convoy release get podinfo-git -n demo")
		if *chartDir != "" {
			fmt.Printf("and the example chart at %s, which the Release demo/web-git takes with its values-prod.yaml:\n", gitChartDir)
			fmt.Println("kubectl convoy release get web-git -n demo")
			fmt.Printf("and %s/%s, which demo/web-team-values reads as its values source (spec.valuesSource) over the chart from the OCI registry:\n", teamValuesDir, teamValuesFile)
			fmt.Println("kubectl convoy release get web-team-values -n demo")
		}
		fmt.Println("and demo/podinfo-git-signed its branch signed, once the commit's SSH signature verifies (spec.source.git.verify):")
		fmt.Println("kubectl convoy release get podinfo-git-signed -n demo")
		printReceiver(cp, absDir, gitExample)
	}
	fmt.Println("\nPress Ctrl-C to stop.")

	if p := cp.ConvoyAPIServer(); p != nil {
		// Stop early, with the log, if convoy-apiserver dies.
		go func() {
			for ctx.Err() == nil {
				if done, err := p.Exited(); done {
					fmt.Fprintf(os.Stderr, "local-up: convoy-apiserver exited (%v); see %s\n", err, p.LogFile())
					stop()
					return
				}
				time.Sleep(time.Second)
			}
		}()
	}
	select {
	case <-ctx.Done():
	case err := <-standInDone:
		if err != nil {
			return fmt.Errorf("the stand-in of convoy's controller stopped: %w", err)
		}
	}
	return nil
}

// releaseFromRegistry packages the chart of chartDir as helm package does,
// pushes it to the registry as helm push does (charts/NAME:VERSION), signs
// its digest with a key made for this run (a Sigstore bundle as an OCI
// referrer, as cosign v3 does), keeps the public key in the Secret
// demo/web-signing-keys, and creates the Release demo/web of that tag,
// which verifies that signature and acts as the example's ServiceAccount.
// It returns the chart's reference and demo/web.
func releaseFromRegistry(ctx context.Context, cp *controlplane.ControlPlane, registry *ociregistry.Server, chartDir string) (string, *convoyv1alpha1.Release, error) {
	repo, tag, digest, err := pushChart(ctx, registry, chartDir)
	if err != nil {
		return "", nil, err
	}
	// Signed as cosign v3 signs (a Sigstore bundle attached as an OCI
	// referrer), with a key made for this run: no private key is kept.
	signer, pub, err := cosigner.GenerateKey()
	if err != nil {
		return "", nil, err
	}
	signed, err := registry.Digest(repo, digest)
	if err != nil {
		return "", nil, err
	}
	if err := cosigner.SignReferrer(ctx, signed, signer, registry.ClientOptions(ctx)...); err != nil {
		return "", nil, fmt.Errorf("signing the example chart: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return "", nil, err
	}
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-signing-keys"}, Data: map[string][]byte{"local-up.pub": pub}}
	if _, err := kube.CoreV1().Secrets("demo").Create(ctx, keys, metav1.CreateOptions{}); err != nil {
		return "", nil, fmt.Errorf("creating the Secret demo/web-signing-keys: %w", err)
	}
	convoy, err := convoyclient.NewForConfig(cp.AdminConfig())
	if err != nil {
		return "", nil, err
	}
	release := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{
			ServiceAccountName: "podinfo-deployer",
			Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: registry.URL(repo), Tag: tag,
				Verify: &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: keys.Name}}}},
			Content:    &convoyv1alpha1.ReleaseContent{Values: &runtime.RawExtension{Raw: []byte(`{"message":"hello from demo/web"}`)}},
			SyncPolicy: convoyv1alpha1.SyncPolicy{Automatic: &convoyv1alpha1.AutomaticSync{}, Interval: &metav1.Duration{Duration: 30 * time.Second}},
			HealthAssessment: &convoyv1alpha1.HealthAssessment{
				GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"convoy.kumodo.io/default": "true"}},
				Deadline:              &metav1.Duration{Duration: 5 * time.Minute},
			},
		},
	}
	if _, err := convoy.ConvoyV1alpha1().Releases("demo").Create(ctx, release, metav1.CreateOptions{}); err != nil {
		return "", nil, fmt.Errorf("creating the Release demo/web: %w", err)
	}
	if err := keylessRelease(ctx, kube, convoy, registry, release, signed); err != nil {
		return "", nil, err
	}
	pushed := registry.URL(repo) + ":" + tag
	fmt.Fprintf(os.Stderr, "local-up: pushed and signed %s and created the Releases demo/web and demo/web-keyless\n", pushed)
	return pushed, release, nil
}

// pushChart packages the chart of chartDir as helm package does and pushes
// it to registry as helm push does, as charts/NAME:VERSION. It returns the
// repository, the tag and the digest pushed.
func pushChart(ctx context.Context, registry *ociregistry.Server, chartDir string) (repo, tag, digest string, err error) {
	chrt, err := loader.LoadDir(chartDir)
	if err != nil {
		return "", "", "", fmt.Errorf("loading the example chart: %w", err)
	}
	tmp, err := os.MkdirTemp("", "local-up-chart")
	if err != nil {
		return "", "", "", err
	}
	defer os.RemoveAll(tmp)
	packaged, err := chartutil.Save(chrt, tmp)
	if err != nil {
		return "", "", "", fmt.Errorf("packaging the example chart: %w", err)
	}
	tgz, err := os.ReadFile(packaged)
	if err != nil {
		return "", "", "", err
	}
	meta, err := json.Marshal(chrt.Metadata)
	if err != nil {
		return "", "", "", err
	}
	repo, tag = "charts/"+chrt.Metadata.Name, chrt.Metadata.Version
	if digest, err = registry.PushChart(ctx, repo, tag, tgz, meta); err != nil {
		return "", "", "", fmt.Errorf("pushing the example chart: %w", err)
	}
	return repo, tag, digest, nil
}

// The identity of make run's keyless signature: a release workflow of
// GitHub Actions, as cosign sign writes it there.
const (
	keylessIssuer  = "https://token.actions.githubusercontent.com"
	keylessSubject = "https://github.com/kumodo/web/.github/workflows/release.yaml@refs/tags/v1.0.0"
)

// keylessRelease signs the chart again, keyless (the legacy tag layout, as
// cosign v2 does in CI), with a Sigstore instance in memory made for this
// run, keeps its trusted_root.json in the Secret demo/sigstore-root, and
// creates the Release demo/web-keyless: web's spec, verified by that
// identity and trust root.
func keylessRelease(ctx context.Context, kube kubernetes.Interface, convoy convoyclient.Interface, registry *ociregistry.Server, web *convoyv1alpha1.Release, signed name.Digest) error {
	sigstore, err := cosigner.NewSigstore()
	if err != nil {
		return err
	}
	if err := sigstore.SignTag(ctx, signed, keylessIssuer, keylessSubject, cosigner.Evidence{}, registry.ClientOptions(ctx)...); err != nil {
		return fmt.Errorf("signing the example chart keyless: %w", err)
	}
	trust, err := sigstore.TrustedRoot(cosigner.RootOptions{})
	if err != nil {
		return err
	}
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sigstore-root"}, Data: map[string][]byte{verify.TrustRootKey: trust}}
	if _, err := kube.CoreV1().Secrets("demo").Create(ctx, root, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Secret demo/sigstore-root: %w", err)
	}
	release := web.DeepCopy()
	release.ObjectMeta = metav1.ObjectMeta{Namespace: "demo", Name: "web-keyless"}
	release.Spec.Source.OCIRepository.Verify = &convoyv1alpha1.OCIVerification{Provider: "cosign",
		MatchOIDCIdentity: []convoyv1alpha1.OIDCIdentityMatch{{
			Issuer:  regexp.QuoteMeta(keylessIssuer),
			Subject: `https://github\.com/kumodo/web/\.github/workflows/release\.yaml@refs/tags/v.*`,
		}},
		TrustedRootSecretRef: &convoyv1alpha1.LocalObjectReference{Name: root.Name}}
	release.Spec.Content = &convoyv1alpha1.ReleaseContent{Values: &runtime.RawExtension{Raw: []byte(`{"message":"hello from demo/web-keyless"}`)}}
	if _, err := convoy.ConvoyV1alpha1().Releases("demo").Create(ctx, release, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Release demo/web-keyless: %w", err)
	}
	return nil
}

// gitChartDir is where the Git example holds the example chart's directory.
const gitChartDir = "charts/web"

// releaseFromGit commits tree, the files of dir (and of the example chart
// under gitChartDir and the team's values under teamValuesDir, when web,
// the Release of the OCI registry's chart, is not nil), to the repository
// podinfo.git under root (branch main), which server serves, and creates
// the Release demo/podinfo-git of its overlays/prod and, with web, the
// Release demo/web-git of the chart with its values-prod.yaml and
// demo/web-team-values, web's chart with the team's values from this
// repository (teamValuesRelease); all act as the example's ServiceAccount.
// The branch signed, signed with an SSH key, is released as
// demo/podinfo-git-signed (signedGitRelease). It returns the repository's
// URL.
func releaseFromGit(ctx context.Context, cp *controlplane.ControlPlane, server *gitserver.Server, root, dir string, tree gitserver.Tree, web *convoyv1alpha1.Release) (string, error) {
	repo, err := gitserver.InitBare(root, "podinfo.git")
	if err != nil {
		return "", fmt.Errorf("creating the Git repository: %w", err)
	}
	if _, err := repo.Commit("main", tree, "the kustomize example"); err != nil {
		return "", fmt.Errorf("committing the Git example: %w", err)
	}
	convoy, err := convoyclient.NewForConfig(cp.AdminConfig())
	if err != nil {
		return "", err
	}
	url := server.RepoURL("podinfo.git")
	release := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "podinfo-git"},
		Spec: convoyv1alpha1.ReleaseSpec{
			ServiceAccountName: "podinfo-deployer",
			Source: convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{
				URL: url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "overlays/prod"}},
			SyncPolicy: convoyv1alpha1.SyncPolicy{Automatic: &convoyv1alpha1.AutomaticSync{}, Interval: &metav1.Duration{Duration: 30 * time.Second}},
			HealthAssessment: &convoyv1alpha1.HealthAssessment{
				GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"convoy.kumodo.io/default": "true"}},
				Deadline:              &metav1.Duration{Duration: 5 * time.Minute},
			},
		},
	}
	// Every branch is pushed before the first Release lists the refs: a
	// listing is shared by the Releases of a URL for its max age.
	if err := signedGitRelease(ctx, cp, convoy, repo, tree, release); err != nil {
		return "", err
	}
	if _, err := convoy.ConvoyV1alpha1().Releases("demo").Create(ctx, release, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the Release demo/podinfo-git: %w", err)
	}
	if web != nil {
		webGit := release.DeepCopy()
		webGit.Name = "web-git"
		webGit.Spec.Source.Git.Path = gitChartDir
		webGit.Spec.Content = &convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}}}
		if _, err := convoy.ConvoyV1alpha1().Releases("demo").Create(ctx, webGit, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("creating the Release demo/web-git: %w", err)
		}
		if err := createTeamValuesRelease(ctx, convoy, web, url); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(os.Stderr, "local-up: committed %s to %s and created the Release demo/podinfo-git\n", dir, url)
	return url, nil
}

// startStandIn runs the stand-in of convoy's controller on the control
// plane until ctx is done, logging to dir/logs/standin.log; its end is sent
// to done. It acts as each Release's identity, as the controller does, and
// writes render Secrets as itself (the admin).
func startStandIn(ctx context.Context, cp *controlplane.ControlPlane, dir string, done chan<- error) error {
	logFile, err := os.Create(filepath.Join(dir, "logs", "standin.log"))
	if err != nil {
		return err
	}
	config := cp.AdminConfig()
	convoy, err := convoyclient.NewForConfig(config)
	if err != nil {
		return err
	}
	targets, err := cluster.NewProvider(config, convoy.ConvoyV1alpha1(), cluster.Options{})
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	controller := &standin.Controller{
		Applier: &standin.Applier{Convoy: convoy, Clients: standin.AsIdentity(targets), Clock: clock.RealClock{}, Renders: kube,
			// The example registry runs on loopback.
			Engine: render.NewEngine(source.NewFetcher(source.Options{
				Policy: egress.AddressPolicy{AllowLoopback: true}, CacheBytes: -1}), nil, render.Limits{})},
		Workers: 4,
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile)))
	go func() {
		defer logFile.Close()
		done <- controller.Run(klog.NewContext(ctx, logger), convoyinformers.NewSharedInformerFactory(convoy, 0))
	}()
	return nil
}

// prepareDir empties dir for a fresh run, keeping only the kubeconfig file. A
// non-empty directory without the marker of an earlier run is refused, so a
// wrong --dir cannot wipe anything else.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("%s is not empty and was not made by local-up (no %s); refusing to wipe it", dir, marker)
		}
		for _, e := range entries {
			if e.Name() == "kubeconfig" {
				continue
			}
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("wipe %s: %w", dir, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, marker), []byte("working directory of hack/local-up; wiped at every start\n"), 0o644)
}

// applyExamples applies dir server-side, retrying a few times: a file may
// need a namespace that a later file creates.
func applyExamples(ctx context.Context, cp *controlplane.ControlPlane, dir string) error {
	var out []byte
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
		}
		cmd := cp.Kubectl("apply", "--server-side", "--force-conflicts", "-f", dir)
		if out, err = cmd.CombinedOutput(); err == nil {
			fmt.Fprintf(os.Stderr, "local-up: applied %s\n%s", dir, out)
			return nil
		}
	}
	return fmt.Errorf("apply %s: %w\n%s", dir, err, out)
}

// firstRelease returns a Release to put in the printed examples.
func firstRelease(ctx context.Context, cp *controlplane.ControlPlane) (ns, name string, ok bool) {
	dyn, err := dynamic.NewForConfig(cp.AdminConfig())
	if err != nil {
		return "", "", false
	}
	gvr := schema.GroupVersionResource{Group: "convoy.kumodo.io", Version: "v1alpha1", Resource: "releases"}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(list.Items) == 0 {
		return "", "", false
	}
	return list.Items[0].GetNamespace(), list.Items[0].GetName(), true
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
