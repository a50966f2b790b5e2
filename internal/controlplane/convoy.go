//go:build unix

package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// convoyTokenTTL is the lifetime of the convoy-apiserver's service account
// token: longer than any local session.
const convoyTokenTTL = 48 * time.Hour

// APIServiceName is the name of the APIService of the aggregated group.
const APIServiceName = convoyVersion + "." + convoyAPIGroup

var (
	serviceGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// ConvoyProcess is one running convoy-apiserver.
type ConvoyProcess struct {
	proc         *process
	port         int
	receiverPort int
}

// ReceiverURL is the base URL of its webhook listener (Options.Receivers),
// "" when it has none: https://127.0.0.1:PORT, with the serving
// certificate that ConvoyCA verifies.
func (p *ConvoyProcess) ReceiverURL() string {
	if p.receiverPort == 0 {
		return ""
	}
	return "https://127.0.0.1:" + strconv.Itoa(p.receiverPort)
}

// Stop stops this convoy-apiserver (SIGTERM, SIGKILL after a few seconds).
// It is idempotent; ControlPlane.Stop stops it too.
func (p *ConvoyProcess) Stop() error { return p.proc.stop() }

// Port is the port it serves on, on 127.0.0.1.
func (p *ConvoyProcess) Port() int { return p.port }

// URL is https://127.0.0.1:PORT.
func (p *ConvoyProcess) URL() string { return "https://127.0.0.1:" + strconv.Itoa(p.port) }

// LogFile is the path of its stdout and stderr.
func (p *ConvoyProcess) LogFile() string { return p.proc.logPath }

// PID is its process id (and process group id).
func (p *ConvoyProcess) PID() int { return p.proc.pid() }

// Exited reports whether it has exited, and the error Wait returned.
func (p *ConvoyProcess) Exited() (bool, error) { return p.proc.exited() }

// convoyCredentials is what every convoy-apiserver replica runs with.
type convoyCredentials struct {
	kubeconfig string // service account token and kube-apiserver CA
}

// ConvoyAPIServer returns the convoy-apiserver the APIService points at: the
// one Start started, or the last one passed to RegisterAPIService. Nil if none.
func (c *ControlPlane) ConvoyAPIServer() *ConvoyProcess {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.convoy
}

// StartConvoyAPIServer starts another convoy-apiserver (a replica, or the
// successor of a stopped one) on a new free port with Options.ConvoyArgs and
// then extraArgs, and waits until it serves /readyz to the admin: no
// APIService gates a replica, and a test talks to it directly, so it must
// already authenticate clients (it loads their CA from the cluster after it
// starts serving). It does not register it: see RegisterAPIService.
func (c *ControlPlane) StartConvoyAPIServer(ctx context.Context, extraArgs ...string) (*ConvoyProcess, error) {
	return c.StartConvoyAPIServerFrom(ctx, c.opts.ConvoyAPIServer, extraArgs...)
}

// StartConvoyAPIServerFrom is StartConvoyAPIServer with another binary: a
// benchmark compares two builds on one fleet.
func (c *ControlPlane) StartConvoyAPIServerFrom(ctx context.Context, binary string, extraArgs ...string) (*ConvoyProcess, error) {
	p, err := c.startConvoy(ctx, binary, extraArgs)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	if err := c.waitConvoyServing(ctx, p, true); err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	return p, nil
}

func (c *ControlPlane) startConvoy(ctx context.Context, binary string, extraArgs []string) (*ConvoyProcess, error) {
	if binary == "" {
		return nil, errors.New("no convoy-apiserver binary (Options.ConvoyAPIServer)")
	}
	cred, err := c.ensureConvoyCredentials(ctx)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.convoyN++
	n := c.convoyN
	c.mu.Unlock()

	pk := c.pki
	args := []string{
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + pk.convoyCertFile,
		"--tls-private-key-file=" + pk.convoyKeyFile,
		"--kubeconfig=" + cred.kubeconfig,
		"--authentication-kubeconfig=" + cred.kubeconfig,
		"--authorization-kubeconfig=" + cred.kubeconfig,
	}
	receiverPort := 0
	if c.opts.Receivers {
		if receiverPort, err = freePort(); err != nil {
			return nil, err
		}
		args = append(args, "--receiver-bind-address=127.0.0.1:"+strconv.Itoa(receiverPort))
	}
	args = append(append(args, c.opts.ConvoyArgs...), extraArgs...)
	proc, err := c.launch(fmt.Sprintf("%s-%d", convoyName, n), binary, args, c.opts.ConvoyEnv)
	if err != nil {
		return nil, err
	}
	p := &ConvoyProcess{proc: proc, port: port, receiverPort: receiverPort}
	began := time.Now()
	if err := c.waitConvoyServing(ctx, p, false); err != nil {
		_ = p.Stop()
		return nil, err
	}
	c.logf("%s serving on %s (%s), log %s", proc.name, p.URL(), time.Since(began).Round(100*time.Millisecond), p.LogFile())
	return p, nil
}

// waitConvoyServing waits until the process answers /readyz over TLS with the
// admin client certificate. 200 is ready; unless authenticated is set, 401,
// 403 and 404 show a server that is up but will not tell, which is good
// enough: the APIService's Available condition is the real gate. With
// authenticated, /metrics must not answer 401 or 403: anonymous requests may read
// /readyz, so only a path they may not read shows that the server already
// knows the client CA (it loads it from the cluster after it starts
// serving; a test that scraped a replica at once was answered 403 as
// system:anonymous).
func (c *ControlPlane) waitConvoyServing(ctx context.Context, p *ConvoyProcess, authenticated bool) error {
	roots := x509.NewCertPool()
	roots.AddCert(c.pki.convoyCA.cert)
	admin, err := tls.X509KeyPair(c.pki.admin.certPEM, c.pki.admin.keyPEM)
	if err != nil {
		return fmt.Errorf("admin key pair: %w", err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	err = poll(ctx, 2*time.Minute, 250*time.Millisecond, p.proc.name+" "+p.URL()+"/readyz", func(ctx context.Context) error {
		if done, _ := p.proc.exited(); done {
			return p.proc.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return notYet("%w", err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			if authenticated {
				return c.adminMay(ctx, client, p.URL()+"/metrics")
			}
			return nil
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			if !authenticated {
				return nil
			}
		}
		return notYet("/readyz: %s", resp.Status)
	})
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.LogFile(), p.proc.tail(30))
	}
	return nil
}

// adminMay says whether the admin client may GET url: not yet while the
// server answers 401 or 403 (it does not know the client CA yet); any other
// answer (200, or 404 from a stand-in server without the path) got past
// authentication and authorization.
func (c *ControlPlane) adminMay(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return notYet("%w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return notYet("%s: %s", url, resp.Status)
	}
	return nil
}

// ensureConvoyNamespace creates the namespace and service account of
// convoy-apiserver unless they exist.
func (c *ControlPlane) ensureConvoyNamespace(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.kas.config)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: convoyNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", convoyNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: convoyName, Namespace: convoyNamespace}}
	if _, err := cs.CoreV1().ServiceAccounts(convoyNamespace).Create(ctx, sa, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/%s: %w", convoyNamespace, convoyName, err)
	}
	return nil
}

// ensureConvoyCredentials requests (once) a token of the convoy-apiserver service
// account and writes Dir/convoy.kubeconfig with it.
func (c *ControlPlane) ensureConvoyCredentials(ctx context.Context) (*convoyCredentials, error) {
	c.mu.Lock()
	cred := c.convoyCred
	c.mu.Unlock()
	if cred != nil {
		return cred, nil
	}
	if err := c.ensureConvoyNamespace(ctx); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(c.kas.config)
	if err != nil {
		return nil, err
	}
	ttl := int64(convoyTokenTTL / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(convoyNamespace).CreateToken(ctx, convoyName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token of service account %s/%s: %w", convoyNamespace, convoyName, err)
	}
	path := filepath.Join(c.opts.Dir, "convoy.kubeconfig")
	if _, err := writeKubeconfig(path, c.kas.url, c.kas.caPEM, credentials{name: convoyName, token: tr.Status.Token}); err != nil {
		return nil, err
	}
	cred = &convoyCredentials{kubeconfig: path}
	c.mu.Lock()
	c.convoyCred = cred
	c.mu.Unlock()
	return cred, nil
}

// RegisterAPIService points the Service convoy-system/convoy-apiserver (type
// ExternalName localhost) and the APIService v1alpha1.subresources.convoy.kumodo.io
// at p and waits until the APIService is Available.
func (c *ControlPlane) RegisterAPIService(ctx context.Context, p *ConvoyProcess) error {
	if err := c.registerAPIService(ctx, p); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return nil
}

// apiServiceTimeout bounds the wait for the APIService to become Available.
var apiServiceTimeout = 2 * time.Minute

func (c *ControlPlane) registerAPIService(ctx context.Context, p *ConvoyProcess) error {
	if p == nil {
		return errors.New("RegisterAPIService: no convoy-apiserver")
	}
	dyn, err := dynamic.NewForConfig(c.kas.config)
	if err != nil {
		return err
	}
	port := int64(p.port)
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": convoyName, "namespace": convoyNamespace},
		"spec": map[string]any{
			// Endpoints may not hold loopback addresses; an ExternalName
			// Service resolves to localhost, where the aggregator dials
			// spec.service.port of the APIService.
			"type":         "ExternalName",
			"externalName": "localhost",
			"ports": []any{map[string]any{
				"name": "https", "protocol": "TCP", "port": port, "targetPort": port,
			}},
		},
	}}
	applyOpts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if _, err := dyn.Resource(serviceGVR).Namespace(convoyNamespace).Apply(ctx, convoyName, svc, applyOpts); err != nil {
		return fmt.Errorf("apply Service %s/%s: %w", convoyNamespace, convoyName, err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": APIServiceName},
		"spec": map[string]any{
			"group":                convoyAPIGroup,
			"version":              convoyVersion,
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
			"service":              map[string]any{"namespace": convoyNamespace, "name": convoyName, "port": port},
			"caBundle":             base64.StdEncoding.EncodeToString(c.pki.convoyCA.certPEM),
		},
	}}
	if _, err := dyn.Resource(apiServiceGVR).Apply(ctx, APIServiceName, apiService, applyOpts); err != nil {
		return fmt.Errorf("apply APIService %s: %w", APIServiceName, err)
	}
	began := time.Now()
	err = poll(ctx, apiServiceTimeout, 250*time.Millisecond, "APIService "+APIServiceName+" Available", func(ctx context.Context) error {
		if done, _ := p.proc.exited(); done {
			return p.proc.exitError()
		}
		obj, err := dyn.Resource(apiServiceGVR).Get(ctx, APIServiceName, metav1.GetOptions{})
		if err != nil {
			return notYet("get APIService: %w", err)
		}
		if gotPort, _, _ := unstructured.NestedInt64(obj.Object, "spec", "service", "port"); gotPort != port {
			return notYet("APIService points at port %d, not %d", gotPort, port)
		}
		if st, msg := condition(obj, "Available"); st != "True" {
			return notYet("%s", msg)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.LogFile(), p.proc.tail(30))
	}
	c.logf("APIService %s Available on port %d (%s)", APIServiceName, p.port, time.Since(began).Round(100*time.Millisecond))
	c.mu.Lock()
	c.convoy = p
	c.mu.Unlock()
	return nil
}
