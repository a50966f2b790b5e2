package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoyv1alpha1client "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
)

// Reasons of an Error.
const (
	// ReasonClusterNotFound: the Cluster or the Secret it names does not exist.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterConfigInvalid: the Secret lacks the key, or its value is
	// not a usable kubeconfig.
	ReasonClusterConfigInvalid = "ClusterConfigInvalid"
)

// DefaultKubeconfigKey is the Secret key of the kubeconfig when the Cluster's
// spec.kubeConfig.secretRef.key is empty.
const DefaultKubeconfigKey = "value"

// UserAgent is the user agent of every client a Provider builds.
const UserAgent = "convoy-apiserver"

// Defaults of Options. A drift pass sends two requests per object, several
// objects at a time; client-go's 5/10 (or even 50/100) would make a pass of
// 500 objects take seconds of client-side throttling alone. The target's API
// priority and fairness protects it from a client that sends more.
const (
	DefaultQPS     float32 = 1000
	DefaultBurst           = 2000
	DefaultTimeout         = 10 * time.Second
)

// Target is the clients of one target cluster. A Target is shared between
// callers and must not be modified.
type Target struct {
	// Name is "" for the local cluster, else "<namespace>/<cluster name>".
	Name string
	// Config is the rest.Config the clients were built from, with the
	// Provider's QPS, burst, timeouts and user agent applied.
	Config *rest.Config
	// HTTPClient is the HTTP client behind Dynamic and Mapper. Build further
	// clients with it (kubernetes.NewForConfigAndClient(Config, HTTPClient))
	// to share its connections.
	HTTPClient *http.Client
	Dynamic    dynamic.Interface
	// Mapper lives as long as the Target, so its discovery cache survives
	// from one pass to the next.
	Mapper *Mapper
}

// Options configures the clients a Provider builds. Zero (or negative) fields
// take their defaults.
type Options struct {
	// QPS and Burst of the client-side rate limiter, per target (default 50
	// and 100; client-go's own 5 and 10 are far too low).
	QPS   float32
	Burst int
	// Timeout bounds every request (rest.Config.Timeout), and also the TCP
	// dial and the TLS handshake on their own, so an unreachable cluster fails
	// within Timeout. Default 10s.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.QPS <= 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Error is a failure to build a Target from a Cluster.
type Error struct {
	// Reason is ReasonClusterNotFound or ReasonClusterConfigInvalid.
	Reason string
	// Message is a complete sentence that names the Cluster (and the Secret).
	Message string
	// Err is the cause, if any.
	Err error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Provider gives the Target of a Release. It is safe for concurrent use.
//
// The local Target is built once. Targets of Clusters are cached per Cluster
// (namespace/name) and rebuilt when the kubeconfig they come from changes.
// Every ForRelease of a Release with spec.cluster reads the Cluster and its
// Secret from the API server: two GETs per call, so a change of either is
// seen on the next call without a watch.
type Provider struct {
	opts     Options
	clusters convoyv1alpha1client.ClustersGetter
	secrets  corev1client.SecretsGetter
	local    *Target

	mu    sync.Mutex
	cache map[string]*cacheEntry // by "<namespace>/<name>"
}

// cacheEntry is the Target built from one kubeconfig.
type cacheEntry struct {
	kubeconfig []byte
	target     *Target
}

// NewProvider returns a Provider. local is the rest.Config of the cluster
// convoy-apiserver runs in, used when a Release has no spec.cluster; clusters
// reads Cluster objects and secrets reads Secrets in that same cluster.
func NewProvider(local *rest.Config, clusters convoyv1alpha1client.ClustersGetter, secrets corev1client.SecretsGetter, o Options) (*Provider, error) {
	if local == nil || clusters == nil || secrets == nil {
		return nil, errors.New("cluster: NewProvider needs a local config, a Cluster getter and a Secret getter")
	}
	p := &Provider{
		opts:     o.withDefaults(),
		clusters: clusters,
		secrets:  secrets,
		cache:    map[string]*cacheEntry{},
	}
	var err error
	if p.local, err = p.newTarget("", local); err != nil {
		return nil, fmt.Errorf("cluster: clients of the local cluster: %w", err)
	}
	return p, nil
}

// Local returns the Target of the cluster convoy-apiserver runs in.
func (p *Provider) Local() *Target { return p.local }

// ForRelease returns the Target of release: the local one when spec.cluster
// is nil (or names no Cluster), else that of the Cluster spec.cluster.name in
// the Release's namespace (see ForCluster).
func (p *Provider) ForRelease(ctx context.Context, release *convoyv1alpha1.Release) (*Target, error) {
	if release.Spec.Cluster == nil || release.Spec.Cluster.Name == "" {
		return p.local, nil
	}
	return p.ForCluster(ctx, release.Namespace, release.Spec.Cluster.Name)
}

// ForCluster returns the Target of the Cluster namespace/name, built from the
// kubeconfig in the key spec.kubeConfig.secretRef.key (default "value") of
// the Secret spec.kubeConfig.secretRef.name in the same namespace.
//
// A missing Cluster or Secret is an *Error with ReasonClusterNotFound; a
// missing key or a kubeconfig that cannot be used is an *Error with
// ReasonClusterConfigInvalid. Any other error (reading the Cluster or the
// Secret failed) is returned wrapped.
//
// The kubeconfig must be self-contained: references to local files
// (certificate-authority, client-certificate, client-key, tokenFile), exec
// credential plugins and auth providers are rejected, since they would run
// commands or read files of convoy-apiserver on behalf of whoever can write
// the Secret.
func (p *Provider) ForCluster(ctx context.Context, namespace, name string) (*Target, error) {
	id := namespace + "/" + name
	cl, err := p.clusters.Clusters(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, p.fail(id, &Error{Reason: ReasonClusterNotFound, Message: fmt.Sprintf("Cluster %s not found", id), Err: err})
	}
	if err != nil {
		return nil, fmt.Errorf("get Cluster %s: %w", id, err)
	}
	ref := cl.Spec.KubeConfig.SecretRef
	if ref.Name == "" {
		return nil, p.fail(id, &Error{Reason: ReasonClusterConfigInvalid, Message: fmt.Sprintf("Cluster %s names no Secret in spec.kubeConfig.secretRef.name", id)})
	}
	key := ref.Key
	if key == "" {
		key = DefaultKubeconfigKey
	}
	secretID := namespace + "/" + ref.Name
	secret, err := p.secrets.Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, p.fail(id, &Error{Reason: ReasonClusterNotFound, Message: fmt.Sprintf("Secret %s of Cluster %s not found", secretID, id), Err: err})
	}
	if err != nil {
		return nil, fmt.Errorf("get Secret %s of Cluster %s: %w", secretID, id, err)
	}
	kubeconfig, ok := secret.Data[key]
	if !ok || len(kubeconfig) == 0 {
		return nil, p.fail(id, &Error{Reason: ReasonClusterConfigInvalid, Message: fmt.Sprintf("Secret %s of Cluster %s has no key %q", secretID, id, key)})
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	// The Target depends on nothing but the kubeconfig, so comparing the
	// bytes catches every change that matters (a new Secret, another key,
	// an edited value) and none that does not (labels, a re-created Secret
	// with the same value), which resourceVersions would not.
	if e := p.cache[id]; e != nil && bytes.Equal(e.kubeconfig, kubeconfig) {
		return e.target, nil
	}
	invalid := func(err error) error {
		delete(p.cache, id)
		return &Error{
			Reason:  ReasonClusterConfigInvalid,
			Message: fmt.Sprintf("key %q of Secret %s of Cluster %s is not a usable kubeconfig: %v", key, secretID, id, err),
			Err:     err,
		}
	}
	cfg, err := restConfigFromKubeconfig(kubeconfig)
	if err != nil {
		return nil, invalid(err)
	}
	t, err := p.newTarget(id, cfg)
	if err != nil {
		return nil, invalid(err)
	}
	p.cache[id] = &cacheEntry{kubeconfig: bytes.Clone(kubeconfig), target: t}
	return t, nil
}

// fail drops the cached Target of id, which is gone or broken, and returns err.
func (p *Provider) fail(id string, err *Error) error {
	p.mu.Lock()
	delete(p.cache, id)
	p.mu.Unlock()
	return err
}

// newTarget builds the clients on a copy of cfg. It does no I/O: discovery
// happens on the first use of the Mapper.
func (p *Provider) newTarget(name string, cfg *rest.Config) (*Target, error) {
	cfg, err := p.configure(cfg)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	hc.Transport = countingTransport{cluster: name, next: hc.Transport}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &Target{
		Name:       name,
		Config:     cfg,
		HTTPClient: hc,
		Dynamic:    dyn,
		Mapper:     NewMapper(disc, clock.RealClock{}, DefaultRefreshInterval),
	}, nil
}

// idleConnsPerHost is client-go's value for the transports it builds.
const idleConnsPerHost = 25

// configure returns a copy of in with the Provider's rate limits, timeouts
// and user agent.
//
// client-go has no setting for the TLS handshake timeout: the transport it
// builds from a rest.Config always waits 10s for a handshake (and dials with
// a 30s timeout unless rest.Config.Dial is set). So configure builds the
// transport itself, the way client-go does (rest.TLSConfigFor,
// utilnet.SetTransportDefaults), with a net.Dialer and a TLS handshake
// timeout of Options.Timeout, and puts it in rest.Config.Transport; the TLS
// settings move into that transport, so TLSClientConfig is cleared (client-go
// refuses a Transport together with TLS options). Every client built from the
// returned config shares the transport and its connections.
//
// A config with an exec credential plugin or an auth provider (possible only
// for the local cluster: see ForCluster) keeps client-go's transport, because
// the plugin adds a TLS certificate callback that client-go does not allow
// with a custom Transport; so does a config that brings its own Transport.
// Then only rest.Config.Dial carries the dial timeout, and the handshake is
// bounded by rest.Config.Timeout, which covers the whole request anyway.
func (p *Provider) configure(in *rest.Config) (*rest.Config, error) {
	cfg := rest.CopyConfig(in)
	timeout := p.opts.Timeout
	cfg.QPS = p.opts.QPS
	cfg.Burst = p.opts.Burst
	cfg.RateLimiter = nil // else QPS and Burst are ignored
	cfg.Timeout = timeout
	cfg.UserAgent = UserAgent
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	}
	if cfg.Transport != nil || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return cfg, nil
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS configuration: %w", err)
	}
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               proxy,
		DialContext:         cfg.Dial,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: timeout,
		MaxIdleConnsPerHost: idleConnsPerHost,
		DisableCompression:  cfg.DisableCompression,
	})
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg, nil
}

// restConfigFromKubeconfig parses a kubeconfig that must be self-contained
// and returns the rest.Config of its current context.
func restConfigFromKubeconfig(data []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	if err := checkSelfContained(raw); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkSelfContained rejects the parts of the current context that would
// read local files or run commands.
func checkSelfContained(raw *clientcmdapi.Config) error {
	kctx := raw.Contexts[raw.CurrentContext]
	if kctx == nil {
		return nil // ClientConfig reports it
	}
	var refs []string
	if c := raw.Clusters[kctx.Cluster]; c != nil && c.CertificateAuthority != "" {
		refs = append(refs, "certificate-authority (a file; use certificate-authority-data)")
	}
	if a := raw.AuthInfos[kctx.AuthInfo]; a != nil {
		if a.ClientCertificate != "" {
			refs = append(refs, "client-certificate (a file; use client-certificate-data)")
		}
		if a.ClientKey != "" {
			refs = append(refs, "client-key (a file; use client-key-data)")
		}
		if a.TokenFile != "" {
			refs = append(refs, "tokenFile (a file; use token)")
		}
		if a.Exec != nil {
			refs = append(refs, "exec (credential plugins are not run)")
		}
		if a.AuthProvider != nil {
			refs = append(refs, "auth-provider (not supported)")
		}
	}
	if len(refs) > 0 {
		return fmt.Errorf("context %q is not self-contained: %s", raw.CurrentContext, strings.Join(refs, "; "))
	}
	return nil
}
