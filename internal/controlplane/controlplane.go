//go:build unix

// Package controlplane runs a local Kubernetes control plane, etcd and
// kube-apiserver from prebuilt binaries (hack/testbin.sh), optionally
// kube-controller-manager, kube-scheduler and kwok (simulated Nodes and
// Pods), and optionally convoy-apiserver registered as an aggregated API
// server. `make run`
// (hack/local-up) and the e2e tests share it.
//
// Every process runs in its own process group with its output in
// Options.Dir/logs/; Stop ends them all.
package controlplane

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Options configures Start.
type Options struct {
	// Dir is the working directory: certificates, etcd data, logs and
	// kubeconfigs. It is created; the etcd data of an earlier run is removed.
	Dir string
	// BinDir holds etcd, kube-apiserver and kubectl.
	BinDir string
	// CRDDir is applied first (server-side) and every CRD waited for until
	// Established. Empty: skipped.
	CRDDir string
	// ManifestDirs are applied after the CRDs, server-side, in order.
	ManifestDirs []string
	// ConvoyAPIServer is the path of the convoy-apiserver binary. Empty: it is
	// neither started nor registered.
	ConvoyAPIServer string
	// ConvoyArgs are extra flags for every convoy-apiserver started.
	ConvoyArgs []string
	// ConvoyEnv are extra environment variables (KEY=VALUE) of every
	// convoy-apiserver started, e.g. GOMEMLIMIT.
	ConvoyEnv []string
	// Workloads starts kube-controller-manager, kube-scheduler and kwok with
	// a simulated Node, so that Deployments get Pods that become Ready.
	Workloads bool
	// Receivers makes every convoy-apiserver started also take webhook
	// deliveries, on a port of its own on 127.0.0.1 over HTTPS with its
	// serving certificate (--receiver-bind-address; ReceiverURL).
	Receivers bool
	// DeferConvoy keeps Start from starting and registering
	// convoy-apiserver: StartConvoyAPIServer starts one later.
	DeferConvoy bool
	// Out receives progress lines. Nil: discarded.
	Out io.Writer
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	opts    Options
	out     io.Writer
	logDir  string
	pki     *pki
	etcdURL string
	kas     *kubeAPIServer // the primary kube-apiserver

	mu         sync.Mutex
	stopped    bool
	procs      []*process // everything started, in start order
	convoy     *ConvoyProcess
	convoyN    int
	convoyCred *convoyCredentials

	stopOnce sync.Once
	stopErr  error
}

// Start brings up etcd and kube-apiserver, applies the CRDs and manifests and,
// if Options.ConvoyAPIServer is set, starts convoy-apiserver and registers its
// APIService. On error everything started so far is stopped again.
func Start(ctx context.Context, o Options) (_ *ControlPlane, err error) {
	if o.Dir == "" || o.BinDir == "" {
		return nil, errors.New("controlplane: Options.Dir and Options.BinDir are required")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return nil, fmt.Errorf("controlplane: binary %s: %w (build them with hack/testbin.sh)", b, err)
		}
	}
	if o.Workloads {
		if err := hasWorkloadBinaries(o.BinDir); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
	}
	if o.ConvoyAPIServer != "" {
		if _, err := os.Stat(o.ConvoyAPIServer); err != nil {
			return nil, fmt.Errorf("controlplane: convoy-apiserver binary: %w", err)
		}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	o.Dir = dir
	if o.Out == nil {
		o.Out = io.Discard
	}
	c := &ControlPlane{opts: o, out: o.Out, logDir: filepath.Join(dir, "logs")}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			err = fmt.Errorf("controlplane: %w", err)
		}
	}()

	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, err
	}
	began := time.Now()
	if c.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	c.kas, err = c.startKubeAPIServer(ctx, kubeAPIServerSpec{
		name:       "kube-apiserver",
		etcdPrefix: "/registry",
		kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
	})
	if err != nil {
		return nil, err
	}
	if o.Workloads {
		if err := c.startWorkloads(ctx); err != nil {
			return nil, err
		}
	}
	if o.CRDDir != "" {
		if err := c.applyDir(ctx, o.CRDDir); err != nil {
			return nil, err
		}
		if err := c.waitCRDsEstablished(ctx); err != nil {
			return nil, err
		}
	}
	if o.ConvoyAPIServer != "" {
		// Before the manifests: artifacts/rbac binds roles in convoy-system.
		if err := c.ensureConvoyNamespace(ctx); err != nil {
			return nil, err
		}
	}
	for _, d := range o.ManifestDirs {
		if err := c.applyDir(ctx, d); err != nil {
			return nil, err
		}
	}
	if o.ConvoyAPIServer != "" && !o.DeferConvoy {
		p, err := c.startConvoy(ctx, o.ConvoyAPIServer, nil)
		if err != nil {
			return nil, err
		}
		if err := c.registerAPIService(ctx, p); err != nil {
			return nil, err
		}
	}
	c.logf("control plane up in %s; KUBECONFIG=%s", time.Since(began).Round(100*time.Millisecond), c.AdminKubeconfig())
	return c, nil
}

func (c *ControlPlane) logf(format string, args ...any) {
	fmt.Fprintf(c.out, "controlplane: "+format+"\n", args...)
}

// launch starts a long-running process and records it for Stop.
func (c *ControlPlane) launch(name, bin string, args, env []string) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("control plane is stopped")
	}
	p, err := startProcess(name, filepath.Join(c.logDir, name+".log"), bin, args, env)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// Stop stops every process the control plane started, newest first: SIGTERM
// to its process group, SIGKILL after a few seconds. It waits until they are
// gone and is idempotent.
func (c *ControlPlane) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopped = true
		procs := c.procs
		c.mu.Unlock()
		var errs []error
		for i := len(procs) - 1; i >= 0; i-- {
			errs = append(errs, procs[i].stop())
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Dir is the working directory (absolute).
func (c *ControlPlane) Dir() string { return c.opts.Dir }

// AdminKubeconfig is the path of a kubeconfig for CN=admin O=system:masters.
func (c *ControlPlane) AdminKubeconfig() string { return c.kas.kubeconfig }

// AdminConfig returns a copy of the admin rest.Config.
func (c *ControlPlane) AdminConfig() *rest.Config { return rest.CopyConfig(c.kas.config) }

// ConvoyCA is the pool of the authority that signs the serving certificate
// of every convoy-apiserver started (for 127.0.0.1 and localhost).
func (c *ControlPlane) ConvoyCA() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.convoyCA.cert)
	return pool
}

// Kubectl returns the built kubectl set up for the admin kubeconfig. The
// kubeconfig goes in through KUBECONFIG, not a flag, so kubectl plugins work
// (kubectl stops looking for a plugin name at the first flag).
func (c *ControlPlane) Kubectl(args ...string) *exec.Cmd {
	return c.kubectlFor(c.kas.kubeconfig, args...)
}

func (c *ControlPlane) kubectlFor(kubeconfig string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.opts.BinDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+c.kubectlCacheDir(),
	)
	cmd.SysProcAttr = helperProcAttr()
	return cmd
}

func (c *ControlPlane) kubectlCacheDir() string { return filepath.Join(c.opts.Dir, "kubectl-cache") }

// UserKubeconfig writes a kubeconfig for a client certificate CN=user
// O=groups..., signed by the client CA, to Dir/users/ and returns its path and
// rest.Config. The user has no permissions beyond what RBAC grants it.
func (c *ControlPlane) UserKubeconfig(user string, groups ...string) (string, *rest.Config, error) {
	if user == "" {
		return "", nil, errors.New("controlplane: UserKubeconfig: empty user name")
	}
	kp, err := c.pki.clientCA.issueClient(user, groups...)
	if err != nil {
		return "", nil, fmt.Errorf("controlplane: %w", err)
	}
	path := filepath.Join(c.opts.Dir, "users", safeFileName(user)+".kubeconfig")
	cfg, err := writeKubeconfig(path, c.kas.url, c.pki.serverCA.certPEM, credentials{name: user, certPEM: kp.certPEM, keyPEM: kp.keyPEM})
	if err != nil {
		return "", nil, fmt.Errorf("controlplane: %w", err)
	}
	return path, cfg, nil
}
