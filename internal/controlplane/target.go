//go:build unix

package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// TargetCluster is an extra kube-apiserver on the control plane's etcd, with
// its own etcd prefix: a second cluster. It shares the control plane's
// certificate authorities, so the admin client certificate works on it too,
// but no object: namespaces, CRDs, RBAC are its own.
type TargetCluster struct {
	c          *ControlPlane
	name       string
	kas        *kubeAPIServer
	kubeconfig []byte
}

// targetNames holds the names of the target clusters started, per control
// plane, so two cannot share a name (and with it a process, log and etcd
// prefix).
var targetNames sync.Map // targetKey → struct{}

type targetKey struct {
	c    *ControlPlane
	name string
}

// StartTargetCluster starts a kube-apiserver on the control plane's etcd under
// the etcd prefix "/registry-<name>" (the primary one uses "/registry"), on a
// free port, and waits until it is ready. name must be a DNS label, unique
// among the control plane's target clusters. Its log is logs/kube-apiserver-
// <name>.log and its admin kubeconfig targets/<name>.kubeconfig under Dir.
// ControlPlane.Stop stops it; so does TargetCluster.Stop.
func (c *ControlPlane) StartTargetCluster(ctx context.Context, name string) (*TargetCluster, error) {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return nil, fmt.Errorf("controlplane: target cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	key := targetKey{c, name}
	if _, taken := targetNames.LoadOrStore(key, struct{}{}); taken {
		return nil, fmt.Errorf("controlplane: target cluster %q already started", name)
	}
	t, err := c.startTargetCluster(ctx, name)
	if err != nil {
		targetNames.Delete(key)
		return nil, fmt.Errorf("controlplane: target cluster %s: %w", name, err)
	}
	return t, nil
}

func (c *ControlPlane) startTargetCluster(ctx context.Context, name string) (*TargetCluster, error) {
	spec := kubeAPIServerSpec{
		name:       "kube-apiserver-" + name,
		etcdPrefix: "/registry-" + name,
		kubeconfig: filepath.Join(c.opts.Dir, "targets", name+".kubeconfig"),
	}
	kas, err := c.startKubeAPIServer(ctx, spec)
	if err != nil {
		// It may have been launched and never became ready.
		if stopErr := c.stopProcesses(spec.name); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	// startKubeAPIServer wrote it with the CA, certificate and key embedded.
	data, err := os.ReadFile(spec.kubeconfig)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read kubeconfig: %w", err), kas.proc.stop())
	}
	return &TargetCluster{c: c, name: name, kas: kas, kubeconfig: data}, nil
}

// stopProcesses stops the processes the control plane launched under name.
func (c *ControlPlane) stopProcesses(name string) error {
	c.mu.Lock()
	var procs []*process
	for _, p := range c.procs {
		if p.name == name {
			procs = append(procs, p)
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.stop())
	}
	return errors.Join(errs...)
}

// Name is the name it was started with.
func (t *TargetCluster) Name() string { return t.name }

// Kubeconfig returns a self-contained kubeconfig for CN=admin
// O=system:masters (server CA, client certificate and key embedded), to put
// in the Secret of a Cluster.
func (t *TargetCluster) Kubeconfig() []byte { return bytes.Clone(t.kubeconfig) }

// KubeconfigPath is the path of the same kubeconfig on disk.
func (t *TargetCluster) KubeconfigPath() string { return t.kas.kubeconfig }

// Config returns a copy of the admin rest.Config.
func (t *TargetCluster) Config() *rest.Config { return rest.CopyConfig(t.kas.config) }

// Kubectl returns the built kubectl set up for the admin kubeconfig of this
// cluster (through KUBECONFIG, as ControlPlane.Kubectl).
func (t *TargetCluster) Kubectl(args ...string) *exec.Cmd {
	return t.c.kubectlFor(t.kas.kubeconfig, args...)
}

// URL is https://127.0.0.1:PORT.
func (t *TargetCluster) URL() string { return t.kas.url }

// LogFile is the path of its kube-apiserver's stdout and stderr.
func (t *TargetCluster) LogFile() string { return t.kas.proc.logPath }

// Stop stops its kube-apiserver (SIGTERM, SIGKILL after a few seconds); its
// objects stay in etcd. It is idempotent; ControlPlane.Stop stops it too. The
// name stays taken: a stopped target cluster cannot be started again.
func (t *TargetCluster) Stop() error { return t.kas.proc.stop() }
