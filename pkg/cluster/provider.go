package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyv1alpha1client "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
)

// Reasons of a failure to build the Access of a Release (a
// *failure.Error; a refusal to read the Secret of a Cluster is
// failure.ReasonForbidden).
var (
	ReasonClusterNotFound = failure.Declare(failure.Reason{
		Name: "ClusterNotFound", Class: failure.ClassNotFound, Shows: everywhere,
		Means:  "the Cluster spec.target names, or the Secret it names, does not exist",
		Action: "create the Cluster and its kubeconfig Secret in the Release's namespace, or correct spec.target",
	})
	ReasonClusterConfigInvalid = failure.Declare(failure.Reason{
		Name: "ClusterConfigInvalid", Class: failure.ClassInvalid, Shows: everywhere, Refusal: true,
		Means:  "the Cluster's Secret lacks the key, or its value is not a usable kubeconfig (exec plugins, files, auth providers, proxies and plain http to a non-loopback server are refused)",
		Action: "write a kubeconfig with a server URL and inline credentials into the Secret (see the Clusters docs)",
	})
)

// DefaultKubeconfigKey is the Secret key of the kubeconfig when the Cluster's
// spec.kubeConfig.secretRef.key is empty.
const DefaultKubeconfigKey = "value"

// privateFlag is the flag that sets Options.AllowPrivate, named in the
// refusal of a private address.
const privateFlag = "--allow-private-clusters"

// loopbackFlag is the flag that sets Options.AllowLoopback, named in the
// refusal of a loopback address.
const loopbackFlag = "--allow-loopback-clusters"

// DefaultServiceAccount is the ServiceAccount a Release without
// spec.serviceAccountName acts as, unless Options say otherwise.
const DefaultServiceAccount = "default"

// Defaults of Options. A drift pass sends two requests per object, several
// objects at a time; client-go's 5/10 (or even 50/100) would make a pass of
// 500 objects take seconds of client-side throttling alone. The target's API
// priority and fairness protects it from a client that sends more.
const (
	DefaultQPS     float32 = 1000
	DefaultBurst           = 2000
	DefaultTimeout         = 10 * time.Second
)

// Bounds of the client caches: identities and Clusters are created by
// tenants, so the caches forget the least recently used beyond these.
const (
	maxIdentities = 4096
	maxClusters   = 1024
)

// Identity is the ServiceAccount a Release acts as on the cluster
// convoy-apiserver runs in: spec.serviceAccountName in the Release's
// namespace, or the default ServiceAccount of that namespace.
type Identity struct {
	Namespace, Name string
}

// UserName is the user name the API server gives the ServiceAccount, which
// requests impersonate: system:serviceaccount:NAMESPACE:NAME.
func (i Identity) UserName() string {
	return "system:serviceaccount:" + i.Namespace + ":" + i.Name
}

// String names the identity in messages: "ServiceAccount NAMESPACE/NAME".
func (i Identity) String() string { return "ServiceAccount " + i.Namespace + "/" + i.Name }

// Target is the clients of one target cluster, as one identity. A Target is
// shared between callers and must not be modified.
type Target struct {
	// Name is "" for the local cluster, else "<namespace>/<cluster name>".
	Name string
	// Config is the rest.Config the clients were built from, with the
	// Provider's QPS, burst, timeouts and user agent applied (and, on the
	// local cluster, the impersonation of the Release's identity).
	Config *rest.Config
	// HTTPClient is the HTTP client behind Dynamic. Build further clients
	// with it (kubernetes.NewForConfigAndClient(Config, HTTPClient)) to share
	// its connections and its identity.
	HTTPClient *http.Client
	Dynamic    dynamic.Interface
	// Mapper lives as long as the cluster's clients, so its discovery cache
	// survives from one pass to the next. On the local cluster every
	// identity shares one Mapper: discovery is the same for every user.
	Mapper meta.RESTMapper
	// Snapshots shares metadata-only LISTs of the cluster, as the Target's
	// identity, between passes; nil when Options.ListFreshness is 0.
	Snapshots *Snapshots
	// Collections remembers the sizes of collections the read-aheads of
	// the passes listed (Reader.ReadAhead).
	Collections *Collections
	// Costs measures what reads of the cluster cost, for every identity
	// (on the local cluster, one Costs is shared like the Mapper).
	Costs *Costs
}

// Access is what a Release may use: its identity, the cluster
// convoy-apiserver runs in as that identity, and its target cluster.
type Access struct {
	// Identity is the ServiceAccount the Release acts as.
	Identity Identity
	// Home is the cluster convoy-apiserver runs in, as Identity: the
	// Release's inputs (source, valuesFrom, render store) are read with it.
	Home kubernetes.Interface
	// HomeSnapshots shares metadata-only LISTs of that cluster as Identity
	// (the resourceVersions of the inputs); nil when lists are off.
	HomeSnapshots *Snapshots
	// Target is the target cluster: the local cluster as Identity when the
	// Release has no spec.cluster, else its Cluster with the kubeconfig's
	// own credentials.
	Target *Target
}

// Who names whom the requests to the target cluster are made as, for
// messages: "ServiceAccount NS/NAME", or "the kubeconfig of
// Cluster.convoy.kumodo.io NS/NAME".
func (a *Access) Who() string {
	if a.Target.Name == "" {
		return a.Identity.String()
	}
	return "the kubeconfig of " + clusterKey(a.Target.Name).Describe()
}

// clusterKey is the key of the Cluster "NAMESPACE/NAME", which names it in
// messages (ObjectKey.Describe).
func clusterKey(namespacedName string) convoyv1alpha1.ObjectKey {
	namespace, name, _ := strings.Cut(namespacedName, "/")
	return convoyv1alpha1.ObjectKey{Group: convoyv1alpha1.GroupName, Kind: "Cluster", Namespace: namespace, Name: name}
}

// Targets gives the Access of a Release. *Provider implements it; the drift
// check, the health loop and the REST storage take it.
type Targets interface {
	ForRelease(ctx context.Context, release *convoyv1alpha1.Release) (*Access, error)
}

var _ Targets = &Provider{}

// Options configures the clients a Provider builds. Zero (or negative) fields
// take their defaults.
type Options struct {
	// QPS and Burst of the client-side rate limiter, per target and identity.
	QPS   float32
	Burst int
	// Timeout bounds every request (rest.Config.Timeout), and also the TCP
	// dial and the TLS handshake on their own, so an unreachable cluster fails
	// within Timeout. Default 10s.
	Timeout time.Duration
	// DefaultServiceAccount is the ServiceAccount a Release without
	// spec.serviceAccountName acts as. Default "default".
	DefaultServiceAccount string
	// AllowLoopback lets the kubeconfig of a Cluster point at a loopback
	// address, for local development. Link-local addresses are always
	// refused.
	AllowLoopback bool
	// AllowPrivate lets the kubeconfig of a Cluster point at a private
	// address (egress.PrivateRanges; --allow-private-clusters). Off, a
	// Cluster, which whoever may create one in a namespace writes, cannot
	// make convoy-apiserver send requests into the cluster's own network
	// or an organization's.
	AllowPrivate bool
	// Deny are address ranges a Cluster's kubeconfig may not reach, beside
	// those an egress.AddressPolicy always refuses.
	Deny []netip.Prefix
	// ListFreshness is how long a metadata-only LIST (Target.Snapshots) is
	// shared between passes; 0: no LIST, objects are read one by one.
	ListFreshness time.Duration
	// MaxResponseBytes bounds every answer of a cluster's API server, after
	// a gzip answer is inflated (ReasonResponseTooLarge). Default
	// DefaultMaxResponseBytes.
	MaxResponseBytes int
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
	if o.DefaultServiceAccount == "" {
		o.DefaultServiceAccount = DefaultServiceAccount
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return o
}

// Provider gives the Access of a Release. It is safe for concurrent use.
//
// On the local cluster, the clients of an identity impersonate it over the
// connections of convoy-apiserver's own local client: they are cached per
// identity and share one transport and one Mapper. Targets of Clusters are
// cached per Cluster (namespace/name) and rebuilt when the kubeconfig they
// come from changes. Every ForRelease of a Release with spec.cluster reads the
// Cluster (as convoy-apiserver: it is convoy's own object) and its Secret (as
// the Release's identity) from the API server: two GETs per call, so a change
// of either, and of the identity's right to read the Secret, is seen on the
// next call without a watch.
type Provider struct {
	opts     Options
	clusters convoyv1alpha1client.ClustersGetter
	// local is the local cluster as convoy-apiserver itself: its transport
	// and Mapper are shared by every identity; it never reads a Release's
	// objects.
	local *Target
	// home builds the clients of an identity on the local cluster; tests
	// replace it.
	home func(Identity) (*homeClients, error)
	// dialControl, when set, gives the dialer of a Cluster's Target its
	// Control in place of the policy's: the tests set one that asks the
	// policy and then refuses any address off loopback, so that a policy
	// that lets an address through fails a test without a packet sent
	// there.
	dialControl func(policy *egress.AddressPolicy) func(network, address string, c syscall.RawConn) error

	mu         sync.Mutex
	identities *lru.Cache // Identity → *homeClients
	remotes    *lru.Cache // "<namespace>/<name>" → *cacheEntry
}

// homeClients are the clients of one identity on the local cluster.
type homeClients struct {
	kube   kubernetes.Interface
	target *Target
}

// cacheEntry is the Target built from one kubeconfig.
type cacheEntry struct {
	kubeconfig []byte
	target     *Target
}

// NewProvider returns a Provider. local is the rest.Config of the cluster
// convoy-apiserver runs in, with convoy-apiserver's own credentials, which
// the clients of identities impersonate them with; clusters reads Cluster
// objects in that same cluster.
func NewProvider(local *rest.Config, clusters convoyv1alpha1client.ClustersGetter, o Options) (*Provider, error) {
	if local == nil || clusters == nil {
		return nil, errors.New("cluster: NewProvider needs a local config and a Cluster getter")
	}
	p := &Provider{
		opts:       o.withDefaults(),
		clusters:   clusters,
		identities: lru.New(maxIdentities),
		remotes: lru.NewWithEvictionFunc(maxClusters, func(_ lru.Key, v any) {
			v.(*cacheEntry).target.HTTPClient.CloseIdleConnections()
		}),
	}
	var err error
	if p.local, err = p.newTarget("", local, nil); err != nil {
		return nil, fmt.Errorf("cluster: clients of the local cluster: %w", err)
	}
	p.home = p.impersonate
	return p, nil
}

// IdentityOf returns the identity release acts as.
func (p *Provider) IdentityOf(release *convoyv1alpha1.Release) Identity {
	name := release.Spec.ServiceAccountName
	if name == "" {
		name = p.opts.DefaultServiceAccount
	}
	return Identity{Namespace: release.Namespace, Name: name}
}

// ForRelease returns the Access of release: its identity, the local cluster
// as that identity, and its target cluster: the local one when spec.cluster
// is nil (or names no Cluster), else the Cluster spec.cluster.name in the
// Release's namespace (see forCluster).
func (p *Provider) ForRelease(ctx context.Context, release *convoyv1alpha1.Release) (*Access, error) {
	id := p.IdentityOf(release)
	home, err := p.homeOf(id)
	if err != nil {
		return nil, accessFailure(err)
	}
	access := &Access{Identity: id, Home: home.kube, HomeSnapshots: home.target.Snapshots, Target: home.target}
	if release.Spec.Cluster != nil && release.Spec.Cluster.Name != "" {
		if access.Target, err = p.forCluster(ctx, id, home.kube, release.Namespace, release.Spec.Cluster.Name); err != nil {
			return nil, accessFailure(err)
		}
	}
	return access, nil
}

// accessFailure gives an error of ForRelease a reason, when it has none: a
// Cluster or its Secret that could not be read (an error of the API server
// other than NotFound and Forbidden) is ClusterNotFound, its cause in the
// message.
func accessFailure(err error) error {
	if _, ok := failure.As(err); ok {
		return err
	}
	return failure.Quiet(ReasonClusterNotFound, err, "%v", err)
}

// KubeAs returns the clientset of id on the local cluster: the cached one
// ForRelease gives the Releases that act as id, whose requests impersonate
// id over convoy-apiserver's own connections. No I/O.
func (p *Provider) KubeAs(id Identity) (kubernetes.Interface, error) {
	h, err := p.homeOf(id)
	if err != nil {
		return nil, err
	}
	return h.kube, nil
}

// homeOf returns the cached clients of id, building them the first time.
func (p *Provider) homeOf(id Identity) (*homeClients, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.identities.Get(id); ok {
		return h.(*homeClients), nil
	}
	h, err := p.home(id)
	if err != nil {
		return nil, fmt.Errorf("clients of %s: %w", id, err)
	}
	p.identities.Add(id, h)
	return h, nil
}

// impersonate builds the clients of id on the local cluster: every request
// goes through the local transport (so identities share its connections)
// with the Impersonate-User header of id. The API server checks that
// convoy-apiserver may impersonate the ServiceAccount, then authorizes the
// request as it, with the groups of a ServiceAccount. No I/O.
func (p *Provider) impersonate(id Identity) (*homeClients, error) {
	cfg := rest.CopyConfig(p.local.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.UserName()}
	hc := &http.Client{
		Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{UserName: id.UserName()}, p.local.HTTPClient.Transport),
		Timeout:   p.local.HTTPClient.Timeout,
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	snapshots, err := p.snapshots(cfg, hc, p.local.Costs)
	if err != nil {
		return nil, err
	}
	return &homeClients{
		kube: kube,
		target: &Target{Name: "", Config: cfg, HTTPClient: hc, Dynamic: dyn, Mapper: p.local.Mapper, Snapshots: snapshots,
			Collections: NewCollections(clock.RealClock{}), Costs: p.local.Costs},
	}, nil
}

// snapshots returns the Snapshots of a Target's clients, priced by costs;
// nil when lists are off.
func (p *Provider) snapshots(cfg *rest.Config, hc *http.Client, costs *Costs) (*Snapshots, error) {
	if p.opts.ListFreshness <= 0 {
		return nil, nil
	}
	meta, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return NewSnapshots(meta, p.opts.ListFreshness, clock.RealClock{}).PricedBy(costs), nil
}

// forCluster returns the Target of the Cluster namespace/name, built from the
// kubeconfig that its spec.kubeConfig.secretRef names (key default "value"),
// read as id through home (docs/contributors/internals.md, "Target
// clusters"). It fails with ReasonClusterNotFound (no Cluster or Secret),
// failure.ReasonForbidden or ReasonImpersonationNotGranted (the Secret),
// ReasonClusterConfigInvalid (no key; not inline data only), or a wrapped
// error. Its dialer refuses what the egress.AddressPolicy of p's Options
// refuses, naming loopbackFlag or privateFlag.
func (p *Provider) forCluster(ctx context.Context, id Identity, home kubernetes.Interface, namespace, name string) (*Target, error) {
	key := namespace + "/" + name
	clusterName := clusterKey(key).Describe()
	cl, err := p.clusters.Clusters(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, p.fail(key, failure.Quiet(ReasonClusterNotFound, err, "%s not found", clusterName))
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", clusterName, err)
	}
	ref := cl.Spec.KubeConfig.SecretRef
	if ref.Name == "" {
		return nil, p.fail(key, failure.Quiet(ReasonClusterConfigInvalid, nil, "%s names no Secret in spec.kubeConfig.secretRef.name", clusterName))
	}
	dataKey := ref.Key
	if dataKey == "" {
		dataKey = DefaultKubeconfigKey
	}
	secretName := convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe()
	secret, err := home.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, p.fail(key, failure.Quiet(ReasonClusterNotFound, err, "%s of %s not found", secretName, clusterName))
	case apierrors.IsForbidden(err):
		if f, ok := ImpersonationRefused(err, id); ok {
			return nil, f
		}
		return nil, failure.New(failure.ReasonForbidden, err, "%s may not get %s, the kubeconfig of %s", id, secretName, clusterName)
	case err != nil:
		return nil, fmt.Errorf("get %s of %s as %s: %w", secretName, clusterName, id, err)
	}
	kubeconfig, ok := secret.Data[dataKey]
	if !ok || len(kubeconfig) == 0 {
		return nil, p.fail(key, failure.Quiet(ReasonClusterConfigInvalid, nil, "%s of %s has no key %q", secretName, clusterName, dataKey))
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	// The Target depends on nothing but the kubeconfig, so comparing the
	// bytes catches every change that matters (a new Secret, another key,
	// an edited value) and none that does not (labels, a re-created Secret
	// with the same value), which resourceVersions would not.
	if v, ok := p.remotes.Get(key); ok && bytes.Equal(v.(*cacheEntry).kubeconfig, kubeconfig) {
		return v.(*cacheEntry).target, nil
	}
	invalid := func(err error) error {
		p.remotes.Remove(key)
		countRefusal(ReasonClusterConfigInvalid)
		return failure.New(ReasonClusterConfigInvalid, err, "key %q of %s of %s is not a usable kubeconfig", dataKey, secretName, clusterName)
	}
	cfg, err := RESTConfigFromKubeconfig(kubeconfig)
	if err != nil {
		return nil, invalid(err)
	}
	policy := egress.AddressPolicy{AllowLoopback: p.opts.AllowLoopback, DenyPrivate: !p.opts.AllowPrivate, Deny: p.opts.Deny,
		Flags: egress.Flags{Loopback: loopbackFlag, Private: privateFlag}}
	t, err := p.newTarget(key, cfg, &policy)
	if err != nil {
		return nil, invalid(err)
	}
	p.remotes.Add(key, &cacheEntry{kubeconfig: bytes.Clone(kubeconfig), target: t})
	return t, nil
}

// fail drops the cached Target of key, which is gone or broken, and returns err.
func (p *Provider) fail(key string, err *failure.Error) error {
	p.mu.Lock()
	p.remotes.Remove(key)
	p.mu.Unlock()
	return err
}

// newTarget builds the clients on a copy of cfg, dialing through policy when
// it is not nil. It does no I/O: discovery happens on the first use of the
// Mapper.
func (p *Provider) newTarget(name string, cfg *rest.Config, policy *egress.AddressPolicy) (*Target, error) {
	cfg, err := p.configure(cfg, policy)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	// The bound applies to the local cluster too, though its API server is
	// the operator's: tenants write the objects it answers with in their
	// namespaces, and a read-ahead page of 500 of them can be hundreds of
	// MiB; over the limit, the pass reads them one by one. Outside the
	// counting, so that the requests are counted by the code of the answer.
	hc.Transport = limitingTransport{cluster: name, limit: int64(p.opts.MaxResponseBytes), next: countingTransport{cluster: name, next: hc.Transport}}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	costs := NewCosts(clock.RealClock{})
	snapshots, err := p.snapshots(cfg, hc, costs)
	if err != nil {
		return nil, err
	}
	return &Target{
		Name:        name,
		Config:      cfg,
		HTTPClient:  hc,
		Dynamic:     dyn,
		Mapper:      NewMapper(disc, clock.RealClock{}, DefaultRefreshInterval),
		Snapshots:   snapshots,
		Collections: NewCollections(clock.RealClock{}),
		Costs:       costs,
	}, nil
}

// idleConnsPerHost is client-go's value for the transports it builds.
const idleConnsPerHost = 25

// configure returns a copy of in with the Provider's rate limits, timeouts
// and user agent. It builds the transport itself, as client-go would
// (rest.TLSConfigFor, utilnet.SetTransportDefaults), so that the dial and
// the TLS handshake are bounded by Options.Timeout too: client-go has no
// setting for the handshake. A config with an exec plugin, an auth provider
// or its own Transport (the local cluster only) keeps client-go's transport,
// whose handshake only rest.Config.Timeout bounds. With a policy (a
// Cluster's kubeconfig) the dialer refuses what the policy refuses and no
// proxy of the environment is used, so the address checked is the one
// connected to.
func (p *Provider) configure(in *rest.Config, policy *egress.AddressPolicy) (*rest.Config, error) {
	cfg := rest.CopyConfig(in)
	timeout := p.opts.Timeout
	cfg.QPS = p.opts.QPS
	cfg.Burst = p.opts.Burst
	cfg.RateLimiter = nil // else QPS and Burst are ignored
	cfg.Timeout = timeout
	cfg.UserAgent = egress.UserAgent
	switch {
	case policy != nil:
		d := policy.Dialer(timeout)
		if p.dialControl != nil {
			d.Control = p.dialControl(policy)
		}
		cfg.Dial = d.DialContext
	case cfg.Dial == nil:
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
	switch {
	case policy != nil:
		proxy = noProxy
	case proxy == nil:
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

// noProxy connects directly.
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }
