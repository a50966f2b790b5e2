//go:build unix

package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// kubeAPIServerSpec describes one kube-apiserver instance. Several instances
// can share the etcd under different prefixes, each one a separate cluster.
type kubeAPIServerSpec struct {
	name       string // process and log name, unique
	etcdPrefix string // --etcd-prefix
	kubeconfig string // where to write its admin kubeconfig
}

// kubeAPIServer is a running kube-apiserver.
type kubeAPIServer struct {
	kubeAPIServerSpec
	port   int
	url    string
	proc   *process
	config *rest.Config // admin
	caPEM  []byte       // CA of its serving certificate
}

// startKubeAPIServer starts a kube-apiserver on the control plane's etcd,
// waits for /readyz and writes its admin kubeconfig. All instances share the
// client, front-proxy and service account credentials.
func (c *ControlPlane) startKubeAPIServer(ctx context.Context, spec kubeAPIServerSpec) (*kubeAPIServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	certFile, keyFile, err := c.pki.kubeAPIServerServing(spec.name)
	if err != nil {
		return nil, err
	}
	k := &kubeAPIServer{
		kubeAPIServerSpec: spec,
		port:              port,
		url:               "https://127.0.0.1:" + strconv.Itoa(port),
		caPEM:             c.pki.serverCA.certPEM,
	}
	pk := c.pki
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--etcd-prefix=" + spec.etcdPrefix,
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.96.0.0/16", // the fleet benchmark has thousands of Services
		"--authorization-mode=RBAC",
		"--client-ca-file=" + pk.clientCAFile,
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--cert-dir=" + filepath.Join(c.opts.Dir, spec.name+"-certs"), // unused with --tls-*-file, but not /var/run/kubernetes
		"--requestheader-client-ca-file=" + pk.frontProxyCAFile,
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pk.frontProxyClientCert,
		"--proxy-client-key-file=" + pk.frontProxyClientKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + pk.saPublicKeyFile,
		"--service-account-signing-key-file=" + pk.saSigningKeyFile,
		// The default service accounts are not waited for (Pods of
		// simulated Nodes need no token).
		"--disable-admission-plugins=ServiceAccount",
		// A namespace annotation scheduler.alpha.kubernetes.io/node-selector
		// keeps its Pods to the Nodes it names (the e2e tests give each
		// namespace Nodes of its own).
		"--enable-admission-plugins=PodNodeSelector",
	}
	if k.proc, err = c.launch(spec.name, filepath.Join(c.opts.BinDir, "kube-apiserver"), args, nil); err != nil {
		return nil, err
	}
	if k.config, err = writeKubeconfig(spec.kubeconfig, k.url, k.caPEM, credentials{name: "admin", certPEM: pk.admin.certPEM, keyPEM: pk.admin.keyPEM}); err != nil {
		return nil, err
	}
	began := time.Now()
	client, err := rest.HTTPClientFor(k.config)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", spec.name, err)
	}
	client.Timeout = 5 * time.Second
	err = poll(ctx, 2*time.Minute, 250*time.Millisecond, spec.name+" "+k.url+"/readyz", func(ctx context.Context) error {
		if done, _ := k.proc.exited(); done {
			return k.proc.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url+"/readyz?verbose", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return notYet("%w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
			return notYet("/readyz: %s:\n%s", resp.Status, failedChecks(body))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w\nlast lines of %s:\n%s", err, k.proc.logPath, k.proc.tail(30))
	}
	c.logf("%s ready on %s (etcd prefix %s, %s)", spec.name, k.url, spec.etcdPrefix, time.Since(began).Round(100*time.Millisecond))
	return k, nil
}

// failedChecks keeps the failing lines ("[-]...") of a verbose /readyz answer.
func failedChecks(body []byte) string {
	var failed [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("[-]")) {
			failed = append(failed, line)
		}
	}
	if len(failed) == 0 {
		return string(body)
	}
	return string(bytes.Join(failed, []byte("\n")))
}
