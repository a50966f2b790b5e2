// Package app holds the options and the start-up of convoy-apiserver.
package app

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/kumodo/convoy-apiserver/pkg/apiserver"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/contest"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/receiver"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sigstoreroot"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

func init() {
	// Logging options read their feature gates (ContextualLogging, ...) from
	// the default gate, so they must be registered there.
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
}

// minRenderMemory is the least --render-memory-limit.
const minRenderMemory = 128 << 20

// Options are the flags of convoy-apiserver.
type Options struct {
	SecureServing  *genericoptions.SecureServingOptionsWithLoopback
	Authentication *genericoptions.DelegatingAuthenticationOptions
	Authorization  *genericoptions.DelegatingAuthorizationOptions
	Audit          *genericoptions.AuditOptions
	Features       *genericoptions.FeatureOptions
	Logs           *logsapi.LoggingConfiguration

	// Kubeconfig is the cluster convoy-apiserver runs in and reads Releases
	// from; empty means in-cluster.
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst limit the client of that cluster.
	KubeAPIQPS   float32
	KubeAPIBurst int

	// Receivers are the options of the listener of webhook deliveries.
	Receivers *receiver.Options

	// ExtraConfig holds the settings of the engines and loops that the flags
	// set; its KubeConfig is set by Complete.
	apiserver.ExtraConfig
}

// NewOptions returns Options with the defaults of convoy-apiserver.
func NewOptions() *Options {
	o := &Options{
		SecureServing:  genericoptions.NewSecureServingOptions().WithLoopback(),
		Authentication: genericoptions.NewDelegatingAuthenticationOptions(),
		Authorization:  genericoptions.NewDelegatingAuthorizationOptions(),
		Audit:          genericoptions.NewAuditOptions(),
		Features:       genericoptions.NewFeatureOptions(),
		Logs:           logs.NewOptions(),
		KubeAPIQPS:     200,
		KubeAPIBurst:   400,
		Receivers:      receiver.NewOptions(),
		ExtraConfig: apiserver.ExtraConfig{
			Resync: 2 * time.Minute,
			Target: cluster.Options{
				QPS: cluster.DefaultQPS, Burst: cluster.DefaultBurst, Timeout: cluster.DefaultTimeout,
				DefaultServiceAccount: cluster.DefaultServiceAccount,
				ListFreshness:         cluster.DefaultListFreshness,
				MaxResponseBytes:      cluster.DefaultMaxResponseBytes,
			},
			Cache:            true,
			CacheMaxAge:      compare.DefaultCacheMaxAge,
			RenderCacheBytes: desired.DefaultRenderCacheBytes,
			BuildCacheBytes:  render.DefaultBuildCacheBytes,
			DriftWorkers:     4,
			CompareWorkers:   compare.DefaultWorkers,
			HealthWorkers:    4,
			CELCostLimit:     health.DefaultCostLimit,
			Render: render.Limits{
				Timeout: render.DefaultTimeout, MaxObjects: render.DefaultMaxObjects, MaxBytes: render.DefaultMaxBytes,
				Memory: render.DefaultMemory, MaxValuesFileBytes: render.DefaultMaxValuesFileBytes,
			},
			RenderConcurrency: 4,
			Contests:          contest.Options{Heals: contest.DefaultHeals, Window: contest.DefaultWindow, MaxBackoff: contest.DefaultMaxBackoff},
			Sources: source.Options{
				Timeout: source.DefaultTimeout, MaxArtifactBytes: source.DefaultMaxArtifactBytes, MaxIndexBytes: source.DefaultMaxIndexBytes,
				MaxGitBytes: source.DefaultMaxGitBytes, MaxGitRefs: source.DefaultMaxGitRefs,
				Concurrency: source.DefaultConcurrency, PerNamespace: source.DefaultPerNamespace, CacheBytes: source.DefaultCacheBytes, ResolveMaxAge: source.DefaultResolveMaxAge,
				SigstoreMirror: sigstoreroot.DefaultMirror,
			},
			LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
				LeaderElect:       true,
				LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
				RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
				RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
				ResourceLock:      resourcelock.LeasesResourceLock,
				ResourceName:      "convoy-apiserver",
				ResourceNamespace: "convoy-system",
			},
		},
	}
	o.SecureServing.BindPort = 6443
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = "convoy-apiserver"
	// Health and metrics are for the kubelet and Prometheus without delegation.
	o.Authorization.WithAlwaysAllowPaths("/healthz", "/readyz", "/livez").WithAlwaysAllowGroups("system:masters")
	// No etcd and no FlowSchemas of our own: priority and fairness is the
	// kube-apiserver's job in front of us.
	o.Features.EnablePriorityAndFairness = false
	return o
}

// Flags returns the flags of o, in named sections for the help text.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Authorization.AddFlags(fss.FlagSet("authorization"))
	o.Audit.AddFlags(fss.FlagSet("auditing"))
	features := fss.FlagSet("features")
	features.BoolVar(&o.Features.EnableProfiling, "profiling", o.Features.EnableProfiling, "Enable profiling via web interface host:port/debug/pprof/")
	utilfeature.DefaultMutableFeatureGate.AddFlag(features)
	logsapi.AddFlags(o.Logs, fss.FlagSet("logging"))

	clusterFlags := fss.FlagSet("cluster")
	clusterFlags.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the cluster that holds the Releases; empty means in-cluster.")
	clusterFlags.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second to the Kubernetes API.")
	clusterFlags.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the Kubernetes API.")
	clusterFlags.DurationVar(&o.Resync, "resync", o.Resync, "Resync period of the informers: every Release gets a drift pass at least this often.")

	target := fss.FlagSet("target clusters")
	target.Float32Var(&o.Target.QPS, "target-qps", o.Target.QPS, "Queries per second to each target cluster.")
	target.IntVar(&o.Target.Burst, "target-burst", o.Target.Burst, "Burst of queries to each target cluster.")
	target.DurationVar(&o.Target.Timeout, "target-timeout", o.Target.Timeout, "Timeout of each request to a target cluster, and of connecting to it.")
	target.IntVar(&o.Target.MaxResponseBytes, "max-target-response-bytes", o.Target.MaxResponseBytes,
		"Most bytes of one answer of a target cluster's API server (discovery, an object, a LIST page), counted after gzip is inflated; past it the request fails (ResponseTooLarge), and a LIST page past it makes the pass read the objects one by one.")
	target.StringVar(&o.Target.DefaultServiceAccount, "default-service-account", o.Target.DefaultServiceAccount,
		"ServiceAccount, in the Release's namespace, that a Release without spec.serviceAccountName acts as.")
	target.BoolVar(&o.Target.AllowLoopback, "allow-loopback-clusters", o.Target.AllowLoopback,
		"Let the kubeconfig of a Cluster reach loopback addresses, over plain http too (local development only). Link-local addresses are always refused.")
	target.BoolVar(&o.Target.AllowPrivate, "allow-private-clusters", o.Target.AllowPrivate,
		"Let the kubeconfig of a Cluster reach private addresses (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7): for target clusters whose API server is on a VPC address. Off, a Cluster, which whoever may create one in a namespace writes, cannot make convoy-apiserver send requests into the cluster's own network (Services, Pods, nodes, control plane).")
	target.Var(prefixes{&o.Target.Deny}, "deny-cidr",
		"Address ranges (CIDRs, comma-separated or repeated) a Cluster's kubeconfig may not reach, beside loopback, link-local, unspecified and the known cloud metadata services, which are always refused: e.g. the nodes' network, the control plane's, a metadata service of your own.")

	observer := fss.FlagSet("observer")
	observer.IntVar(&o.DriftWorkers, "drift-workers", o.DriftWorkers, "Releases the drift loop checks at once.")
	observer.IntVar(&o.CompareWorkers, "compare-workers", o.CompareWorkers, "Objects of one Release compared at once.")
	observer.IntVar(&o.HealthWorkers, "health-workers", o.HealthWorkers, "Releases the health loop assesses at once.")
	observer.Uint64Var(&o.CELCostLimit, "cel-cost-limit", o.CELCostLimit, "Cost limit of one evaluation of a health rule; a rule past it is Unknown.")

	renders := fss.FlagSet("renders")
	renders.DurationVar(&o.Render.Timeout, "render-timeout", o.Render.Timeout,
		"Longest render of a Release; a chart's templating is stopped (its process killed) at it (RenderTimeout).")
	renders.IntVar(&o.Render.MaxObjects, "max-render-objects", o.Render.MaxObjects, "Most objects a render may hold (TooManyObjects).")
	renders.IntVar(&o.Render.MaxBytes, "max-render-bytes", o.Render.MaxBytes,
		"Most bytes of JSON a render may take, and a stored render may inflate to (RenderTooLarge, StoredRenderTooLarge).")
	renders.IntVar(&o.Render.Memory, "render-memory-limit", o.Render.Memory,
		"Most bytes of memory the process that templates one chart may take, enforced by the kernel (RLIMIT_DATA); past it the process is stopped (RenderMemoryExceeded). Children at once (--max-concurrent-renders) times this, plus the server's own peak, must fit the container's memory limit.")
	renders.IntVar(&o.Render.MaxValuesFileBytes, "max-values-file-bytes", o.Render.MaxValuesFileBytes,
		"Most bytes of one file of spec.content.valuesFiles; a larger one is refused before it is parsed (ValuesFileTooLarge).")
	renders.IntVar(&o.RenderConcurrency, "max-concurrent-renders", o.RenderConcurrency,
		"Charts templated at once, by the loops and the subresources together; a render waits for a slot within its timeout.")

	sources := fss.FlagSet("sources")
	sources.BoolVar(&o.Sources.Policy.AllowLoopback, "allow-loopback-sources", o.Sources.Policy.AllowLoopback,
		"Let OCI registries and Helm repositories be reached on loopback addresses, over plain http too (local development only). Link-local and metadata addresses are always refused; --deny-cidr applies to sources too.")
	sources.BoolVar(&o.Sources.AllowPrivate, "allow-private-sources", o.Sources.AllowPrivate,
		"Let OCI registries and Helm repositories be reached on private addresses (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7): for a registry inside your network. Off, a Release's URL cannot reach the cluster's own network (Services, Pods, nodes, control plane). Clusters have --allow-private-clusters.")
	sources.DurationVar(&o.Sources.Timeout, "fetch-timeout", o.Sources.Timeout, "Longest fetch of an OCI or Helm repository source: resolving, downloading and verifying (FetchTimeout).")
	sources.IntVar(&o.Sources.MaxArtifactBytes, "max-artifact-bytes", o.Sources.MaxArtifactBytes,
		"Most bytes of an OCI manifest, layer, chart archive, and of what a bundle of manifests inflates to (ArtifactTooLarge); checked against the declared size before a download, and while reading.")
	sources.IntVar(&o.Sources.MaxIndexBytes, "max-index-bytes", o.Sources.MaxIndexBytes, "Most bytes of a Helm repository's index.yaml (IndexTooLarge).")
	sources.IntVar(&o.Sources.MaxGitBytes, "max-git-bytes", o.Sources.MaxGitBytes,
		"Most bytes one Git fetch receives in an answer and stores (the commit's objects, inflated) (ArtifactTooLarge).")
	sources.IntVar(&o.Sources.MaxGitRefs, "max-git-refs", o.Sources.MaxGitRefs, "Most refs a Git server may advertise in a listing (GitRefsTooMany).")
	sources.IntVar(&o.Sources.Concurrency, "max-concurrent-fetches", o.Sources.Concurrency,
		"Requests to registries and repositories at once (a tag's HEAD, an index, a download), by the loops and the subresources together; a request waits for a slot within the fetch timeout. A request shared by several Releases takes one slot, and keeps it when its callers give up.")
	sources.IntVar(&o.Sources.PerNamespace, "max-concurrent-fetches-per-namespace", o.Sources.PerNamespace,
		"Slots of --max-concurrent-fetches that the Releases of one namespace hold at once (at most all of them), so that a tenant's slow or silent registry leaves slots to the other namespaces.")
	sources.IntVar(&o.Sources.CacheBytes, "source-cache-bytes", o.Sources.CacheBytes, "Most bytes of artifacts kept by origin (registry and repository, chart URL) and digest, shared by every Release that names that origin and may read them there: access is confirmed per credentials.")
	sources.DurationVar(&o.Sources.ResolveMaxAge, "source-resolve-max-age", o.Sources.ResolveMaxAge,
		"How long a tag's digest or a Helm index is reused per URL and credentials, and an access to a kept artifact taken as confirmed: a tag moved shows within it.")

	sources.BoolVar(&o.Sources.PublicSigstore, "sigstore-public-trust-root", o.Sources.PublicSigstore,
		"Let keyless verifications without a trustedRootSecretRef use the public Sigstore instance's trust root: fetched on first use from --sigstore-tuf-mirror through the sources' address policy (TUF, verified from the root sigstore-go embeds), kept in memory, refreshed daily. The one outbound connection no tenant chooses; off, such Releases are SignatureUnverified.")
	sources.StringVar(&o.Sources.SigstoreMirror, "sigstore-tuf-mirror", o.Sources.SigstoreMirror,
		"The TUF repository of the public Sigstore trust root (a mirror of it for a cluster without access to the internet's).")

	contests := fss.FlagSet("contested fields")
	contests.IntVar(&o.Contests.Heals, "contest-heals", o.Contests.Heals,
		"Take-backs of a field by the same manager after a self-heal, within --contest-window, that make it contested: self-heal then backs off.")
	contests.DurationVar(&o.Contests.Window, "contest-window", o.Contests.Window,
		"The window of --contest-heals, and how long a contested field must stay healed for its contest to end.")
	contests.DurationVar(&o.Contests.MaxBackoff, "contest-max-backoff", o.Contests.MaxBackoff,
		"Longest time between two self-heal requests of a Release whose drifted fields are all contested (the backoff doubles from its interval).")

	caches := fss.FlagSet("caches")
	caches.BoolVar(&o.Cache, "cache", o.Cache,
		"Reuse what did not change: shared metadata-only LISTs, the compare (dry run) of an unchanged object, renders of unchanged inputs, verdicts of unchanged objects. Off: every pass reads, renders and dry-runs everything.")
	caches.DurationVar(&o.CacheMaxAge, "cache-max-age", o.CacheMaxAge,
		"Longest reuse of a compare, render or verdict: every object gets a real dry run at least this often, so a new admission policy, webhook or CRD default shows within it.")
	caches.DurationVar(&o.Target.ListFreshness, "list-freshness", o.Target.ListFreshness,
		"How long a metadata-only LIST is shared between passes, at least 4 times as long as the LIST took; a change on a cluster shows at the first pass whose LIST is newer (a pass after a sync always lists again).")
	caches.IntVar(&o.RenderCacheBytes, "render-cache-bytes", o.RenderCacheBytes, "Most bytes of renders kept (their compressed JSON).")
	caches.IntVar(&o.BuildCacheBytes, "build-cache-bytes", o.BuildCacheBytes,
		"Most bytes of kustomize and chart-directory builds kept (their JSON), keyed by the content of the files each build can read, each for an hour at most; 0 keeps none. Not turned off by --cache=false: a build's key is its whole input.")
	o.Receivers.AddFlags(fss.FlagSet("receivers"))
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fss.FlagSet("leader election"))
	return fss
}

// Complete fills in what the flags leave open: the client config, and a
// self-signed serving certificate when none is given.
func (o *Options) Complete() error {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig %q: %w", o.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cfg.UserAgent = apiserver.Name
	o.KubeConfig = cfg

	if o.Kubeconfig != "" {
		if o.Authentication.RemoteKubeConfigFile == "" {
			o.Authentication.RemoteKubeConfigFile = o.Kubeconfig
		}
		if o.Authorization.RemoteKubeConfigFile == "" {
			o.Authorization.RemoteKubeConfigFile = o.Kubeconfig
		}
	}

	// For development only: a real deployment mounts a certificate.
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return fmt.Errorf("creating self-signed certificates: %w", err)
	}
	return nil
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	errs = append(errs, o.Features.Validate()...)
	errs = append(errs, o.Receivers.Validate()...)
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if o.Resync <= 0 {
		errs = append(errs, fmt.Errorf("--resync must be positive"))
	}
	if o.Target.QPS <= 0 || o.Target.Burst <= 0 || o.Target.Timeout <= 0 || o.Target.MaxResponseBytes <= 0 {
		errs = append(errs, fmt.Errorf("--target-qps, --target-burst, --target-timeout and --max-target-response-bytes must be positive"))
	}
	if msgs := validation.IsDNS1123Subdomain(o.Target.DefaultServiceAccount); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--default-service-account %q is not a ServiceAccount name: %s", o.Target.DefaultServiceAccount, strings.Join(msgs, "; ")))
	}
	if le := o.LeaderElection; le.LeaderElect && (le.LeaseDuration.Duration <= le.RenewDeadline.Duration || le.RenewDeadline.Duration <= le.RetryPeriod.Duration || le.RetryPeriod.Duration <= 0) {
		errs = append(errs, fmt.Errorf("leader election needs lease duration > renew deadline > retry period > 0"))
	}
	if o.Cache && (o.CacheMaxAge <= 0 || o.Target.ListFreshness <= 0 || o.RenderCacheBytes <= 0) {
		errs = append(errs, fmt.Errorf("--cache-max-age, --list-freshness and --render-cache-bytes must be positive with --cache"))
	}
	if o.Render.Timeout <= 0 || o.Render.MaxObjects <= 0 || o.Render.MaxBytes <= 0 || o.Render.MaxValuesFileBytes <= 0 || o.RenderConcurrency <= 0 {
		errs = append(errs, fmt.Errorf("--render-timeout, --max-render-objects, --max-render-bytes, --max-values-file-bytes and --max-concurrent-renders must be positive"))
	}
	// The Go runtime and the binary take about 85 MiB of it before the
	// chart is read.
	if o.Render.Memory < minRenderMemory {
		errs = append(errs, fmt.Errorf("--render-memory-limit must be at least %d (128Mi): the render process needs about 85Mi before it reads the chart", minRenderMemory))
	}
	if u, err := url.Parse(o.Sources.SigstoreMirror); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--sigstore-tuf-mirror %q is not an http(s) URL", o.Sources.SigstoreMirror))
	}
	if s := o.Sources; s.Timeout <= 0 || s.MaxArtifactBytes <= 0 || s.MaxIndexBytes <= 0 || s.MaxGitBytes <= 0 || s.MaxGitRefs <= 0 || s.Concurrency <= 0 || s.PerNamespace <= 0 || s.CacheBytes <= 0 || s.ResolveMaxAge <= 0 || s.ResolveMaxAge > 10*time.Minute {
		errs = append(errs, fmt.Errorf("--fetch-timeout, --max-artifact-bytes, --max-index-bytes, --max-git-bytes, --max-git-refs, --max-concurrent-fetches, --max-concurrent-fetches-per-namespace, --source-cache-bytes and --source-resolve-max-age must be positive, and --source-resolve-max-age at most 10m"))
	}
	if c := o.Contests; c.Heals <= 0 || c.Window <= 0 || c.MaxBackoff <= 0 {
		errs = append(errs, fmt.Errorf("--contest-heals, --contest-window and --contest-max-backoff must be positive"))
	}
	if o.DriftWorkers <= 0 || o.CompareWorkers <= 0 || o.HealthWorkers <= 0 || o.CELCostLimit == 0 {
		errs = append(errs, fmt.Errorf("--drift-workers, --compare-workers, --health-workers and --cel-cost-limit must be positive"))
	}
	return utilerrors.NewAggregate(errs)
}

// Config turns the options into the server's configuration.
func (o *Options) Config() (*apiserver.Config, error) {
	kubeClient, err := kubernetes.NewForConfig(o.KubeConfig)
	if err != nil {
		return nil, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	config := apiserver.NewConfig()
	generic := config.Generic
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	generic.FeatureGate = utilfeature.DefaultFeatureGate
	if err := o.SecureServing.ApplyTo(&generic.SecureServing, &generic.LoopbackClientConfig); err != nil {
		return nil, err
	}
	if err := o.Authentication.ApplyTo(&generic.Authentication, generic.SecureServing, generic.OpenAPIConfig); err != nil {
		return nil, err
	}
	if err := o.Authorization.ApplyTo(&generic.Authorization); err != nil {
		return nil, err
	}
	if err := o.Audit.ApplyTo(generic); err != nil {
		return nil, err
	}
	if err := o.Features.ApplyTo(generic, kubeClient, nil); err != nil {
		return nil, err
	}
	config.Extra = o.ExtraConfig
	config.Extra.Receivers = *o.Receivers
	return config, nil
}

// Run builds the server from the options and serves until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	config, err := o.Config()
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Starting convoy-apiserver")
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// NewCommand returns the convoy-apiserver command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:          "convoy-apiserver",
		Short:        "Serves the Release subresources of convoy and runs its drift and health loops",
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return logsapi.ValidateAndApply(o.Logs, utilfeature.DefaultFeatureGate)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
		Args: cobra.NoArgs,
	}
	cmd.SetContext(ctx)
	fss := o.Flags()
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}

// prefixes is a flag of address ranges: CIDRs, comma-separated or repeated.
type prefixes struct{ ranges *[]netip.Prefix }

func (p prefixes) String() string {
	if p.ranges == nil {
		return ""
	}
	out := make([]string, len(*p.ranges))
	for i, r := range *p.ranges {
		out[i] = r.String()
	}
	return strings.Join(out, ",")
}

func (p prefixes) Set(value string) error {
	for _, v := range strings.Split(value, ",") {
		r, err := netip.ParsePrefix(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not a CIDR: %w", v, err)
		}
		*p.ranges = append(*p.ranges, r.Masked())
	}
	return nil
}

func (prefixes) Type() string { return "cidrs" }
