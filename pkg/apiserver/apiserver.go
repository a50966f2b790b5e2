package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/contest"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	convoyscheme "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/scheme"
	generatedopenapi "github.com/kumodo/convoy-apiserver/pkg/generated/openapi"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/observer"
	"github.com/kumodo/convoy-apiserver/pkg/receiver"
	"github.com/kumodo/convoy-apiserver/pkg/receiverindex"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/registry/release"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
	"github.com/kumodo/convoy-apiserver/pkg/sandbox"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
	"github.com/kumodo/convoy-apiserver/pkg/version"
)

// Name is the name of the server in logs, OpenAPI and health checks.
const Name = "convoy-apiserver"

// ExtraConfig is what convoy-apiserver needs beside the generic server: the
// cluster that holds the Releases, and the settings of the engines and loops.
type ExtraConfig struct {
	// KubeConfig is the cluster convoy-apiserver runs in, with its own
	// credentials: its own objects are read and written with it, and the
	// identities of Releases are impersonated over it.
	KubeConfig *rest.Config
	// Target are the client settings of the target clusters.
	Target cluster.Options
	// Resync is the resync period of the observer's informers.
	Resync time.Duration
	// DriftWorkers and HealthWorkers are how many Releases each loop passes
	// at once; CompareWorkers, how many objects of one Release are compared
	// at once.
	DriftWorkers, CompareWorkers, HealthWorkers int
	// CELCostLimit bounds the cost of one evaluation of a health rule.
	CELCostLimit uint64
	// Render bounds every render (time, objects, bytes).
	Render render.Limits
	// RenderConcurrency is how many charts are templated at once, by the
	// loops and the subresources together.
	RenderConcurrency int
	// Sources are the settings of the fetches of OCI and Helm repository
	// sources: their address policy (its Deny is Target.Deny), limits and
	// caches.
	Sources source.Options
	// Contests are the settings of contested fields: how many take-backs
	// within what window, and the longest backoff of self-heal.
	Contests contest.Options
	// Cache turns on the caches of the loops: shared metadata-only LISTs
	// (Target.ListFreshness), the compare of unchanged objects, renders of
	// unchanged inputs and verdicts of unchanged objects, each reused for at
	// most CacheMaxAge; RenderCacheBytes bounds the renders kept,
	// BuildCacheBytes the builds of kustomizations and chart directories
	// (keyed by the content of the files they read, whatever the cache).
	Cache            bool
	CacheMaxAge      time.Duration
	RenderCacheBytes int
	BuildCacheBytes  int
	// LeaderElection elects the replica that runs the loops.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Receivers are the settings of the webhook listener; it runs on every
	// replica when Receivers.BindAddress is set.
	Receivers receiver.Options
}

// Config is the configuration of convoy-apiserver: options turn flags into
// it (cmd/convoy-apiserver/app), Complete().New() builds the server.
type Config struct {
	Generic *genericapiserver.Config
	Extra   ExtraConfig
}

// NewConfig returns a Config with the codecs and the OpenAPI settings of the group.
func NewConfig() *Config {
	generic := genericapiserver.NewConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	generic.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	// info.version is the build of convoy-apiserver: `kubectl convoy version`
	// reads it through the aggregator, where every user may read OpenAPI.
	generic.OpenAPIConfig.Info.Title = "convoy-apiserver"
	generic.OpenAPIConfig.Info.Version = version.Get().GitVersion
	// Server-side apply and OpenAPI v3 discovery need the v3 config.
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIV3Config.Info.Title = "convoy-apiserver"
	generic.OpenAPIV3Config.Info.Version = version.Get().GitVersion
	return &Config{Generic: generic}
}

// CompletedConfig is a Config with its defaults filled in.
type CompletedConfig struct {
	generic genericapiserver.CompletedConfig
	extra   ExtraConfig
}

// Complete fills in what the Config leaves open.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{generic: c.Generic.Complete(nil), extra: c.Extra}
}

// Server is a convoy-apiserver: the generic API server with the group
// installed, and the observer it starts after it serves.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	Observer         *observer.Observer
}

// RegisterMetrics registers the metrics of convoy-apiserver with the legacy
// registry that it serves on /metrics: those of every package that declares
// some (docs/reference/metrics.md lists them).
func RegisterMetrics() {
	observer.RegisterMetrics()
	version.RegisterMetrics()
	cluster.RegisterMetrics()
	agecache.RegisterMetrics()
	source.RegisterMetrics()
	verify.RegisterMetrics()
	sandbox.RegisterMetrics()
	receiver.RegisterMetrics()
	metricSet.Register()
	limit, _ := memoryLimitBytes(cgroupMemoryFiles)
	memoryLimit.Set(float64(limit))
}

// New wires convoy-apiserver: the clients of its own cluster, the engines
// (target clusters, compare, drift check, sync requester), the REST storage
// of subresources.convoy.kumodo.io on them, and the observer's loops on the
// same engines, started by a post-start hook; its readyz check "observer"
// fails while this replica leads but its loops are not running.
func (c CompletedConfig) New() (*Server, error) {
	x := c.extra
	if x.KubeConfig == nil {
		return nil, fmt.Errorf("ExtraConfig.KubeConfig is required")
	}
	// Events and the Lease get clients of their own, each with its own rate
	// limiter: thousands of Events of a first round never make a pass or a
	// Lease renewal wait.
	eventsKube, err := kubernetes.NewForConfig(rest.CopyConfig(x.KubeConfig))
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	leaseKube, err := kubernetes.NewForConfig(rest.CopyConfig(x.KubeConfig))
	if err != nil {
		return nil, fmt.Errorf("creating the Lease client: %w", err)
	}
	convoy, err := convoyclient.NewForConfig(x.KubeConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the convoy client: %w", err)
	}
	targetOpts := x.Target
	if !x.Cache {
		targetOpts.ListFreshness = 0
	}
	targets, err := cluster.NewProvider(x.KubeConfig, convoy.ConvoyV1alpha1(), targetOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the target cluster clients: %w", err)
	}

	generic, err := c.generic.New(Name, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating the generic API server: %w", err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventsKube.EventsV1()})
	eventsCtx, stopEvents := context.WithCancel(context.Background())
	broadcaster.StartRecordingToSink(eventsCtx.Done())
	generic.AddPreShutdownHookOrDie("stop-events", func() error { stopEvents(); return nil })
	hostname, _ := os.Hostname()
	recorder := broadcaster.NewRecorder(convoyscheme.Scheme, Name+"/"+hostname)

	RegisterMetrics()
	// Charts are templated by children of this very binary (sandbox.ChildArg),
	// which the render timeout kills.
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program, to template charts in children of it: %w", err)
	}
	sourceOpts := x.Sources
	sourceOpts.Policy.Deny = x.Target.Deny
	if !x.Cache {
		sourceOpts.CacheBytes = -1
	}
	// One Fetcher and one render Engine for the whole server, built here
	// from the flags and passed down (the drift checker, and through it
	// desired, /diff, /preview and the drift loop): their caches and slots
	// are shared, and no package holds one of its own.
	fetcher := source.NewFetcher(sourceOpts)
	children := sandbox.New(exe, x.RenderConcurrency, x.Render)
	checkRenderNetwork(children)
	renderEngine := render.NewEngine(fetcher, children, x.Render).
		WithBuildCache(x.BuildCacheBytes, time.Hour, clock.RealClock{})
	redactor := redact.New()
	compareEngine := compare.NewEngine(redactor, x.CompareWorkers)
	if x.Cache {
		compareEngine = compareEngine.WithCache(compare.NewResultCache(x.CacheMaxAge, clock.RealClock{}))
	}
	// /diff reads every object (and, with the cache, skips the dry run of an
	// unchanged one); the drift loop also uses the shared LISTs and renders.
	checker := drift.NewChecker(targets, renderEngine, compareEngine, convoy.ConvoyV1alpha1())
	loopChecker := checker
	var verdicts *health.VerdictCache
	if x.Cache {
		loopChecker = checker.WithSnapshots(desired.NewRenderCache(x.RenderCacheBytes, x.CacheMaxAge, clock.RealClock{}))
		verdicts = health.NewVerdictCache(x.CacheMaxAge, clock.RealClock{})
	}
	requester := requests.NewRequester(convoy.ConvoyV1alpha1(), recorder, clock.RealClock{})
	group := genericapiserver.NewDefaultAPIGroupInfo(subresourcesv1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	group.VersionedResourcesStorageMap[subresourcesv1alpha1.SchemeGroupVersion.Version] = release.Storage(release.Engines{
		Releases:    convoy.ConvoyV1alpha1(),
		Inventories: convoy.ConvoyV1alpha1(),
		Checker:     checker,
		Redactor:    redactor,
		Requester:   requester,
	})
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing API group %s: %w", subresourcesv1alpha1.GroupName, err)
	}

	obs := observer.New(observer.Config{
		Convoy:         convoy,
		LeaseKube:      leaseKube,
		Verdicts:       verdicts,
		Checker:        loopChecker,
		Targets:        targets,
		Requester:      requester,
		Contests:       x.Contests,
		Recorder:       recorder,
		Compiler:       health.NewCompiler(x.CELCostLimit),
		Clock:          clock.RealClock{},
		Resync:         x.Resync,
		DriftWorkers:   x.DriftWorkers,
		HealthWorkers:  x.HealthWorkers,
		LeaderElection: x.LeaderElection,
	})
	if err := generic.AddReadyzChecks(healthz.NamedCheck("observer", func(*http.Request) error { return obs.Ready() })); err != nil {
		return nil, fmt.Errorf("adding the observer's readyz check: %w", err)
	}
	generic.AddPostStartHookOrDie("start-observer", func(hook genericapiserver.PostStartHookContext) error {
		go func() {
			if err := obs.Run(hook); err != nil {
				klog.FromContext(hook).Error(err, "The observer stopped")
			}
		}()
		return nil
	})
	if err := startReceivers(c, generic, convoy, targets, requester); err != nil {
		return nil, err
	}
	return &Server{GenericAPIServer: generic, Observer: obs}, nil
}

// startReceivers adds, when --receiver-bind-address is set, the index of
// Receivers and the webhook listener, started by a post-start hook on
// every replica: any replica takes deliveries, and the refreshes they
// record are handled by the leader's drift loop. The listener serves with
// the serving certificate of the aggregated API.
func startReceivers(c CompletedConfig, generic *genericapiserver.GenericAPIServer, convoy convoyclient.Interface, targets *cluster.Provider, requester *requests.Requester) error {
	x := c.extra
	if x.Receivers.BindAddress == "" {
		return nil
	}
	index := receiverindex.New(receiverindex.Config{
		Convoy:                convoy,
		KubeFor:               targets.KubeAs,
		DefaultServiceAccount: x.Target.DefaultServiceAccount,
		Resync:                x.Resync,
		Clock:                 clock.RealClock{},
	})
	var cert dynamiccertificates.CertKeyContentProvider
	if c.generic.SecureServing != nil {
		cert = c.generic.SecureServing.Cert
	}
	listener, err := receiver.New(receiver.Config{
		Options:   x.Receivers,
		Index:     index,
		Releases:  receiver.ClientLister(convoy.ConvoyV1alpha1()),
		Refresher: requester,
		Cert:      cert,
		Clock:     clock.RealClock{},
	})
	if err != nil {
		return fmt.Errorf("creating the webhook listener: %w", err)
	}
	// Bound now: a port taken fails the start, not a goroutine's log.
	if err := listener.Listen(); err != nil {
		return fmt.Errorf("starting the webhook listener: %w", err)
	}
	generic.AddPostStartHookOrDie("start-receivers", func(hook genericapiserver.PostStartHookContext) error {
		go func() {
			if err := index.Run(hook); err != nil {
				klog.FromContext(hook).Error(err, "The index of Receivers stopped")
			}
		}()
		go func() {
			// Deliveries wait in the listen queue until the index holds the
			// Receivers (a Receiver's path answered 404 right after a
			// restart would be a push lost), but not for ever: a Secret
			// that cannot be read keeps the index from syncing.
			waitCtx, cancel := context.WithTimeout(hook, receiverIndexSyncWait)
			if err := wait.PollUntilContextCancel(waitCtx, 100*time.Millisecond, true, func(context.Context) (bool, error) { return index.HasSynced(), nil }); err != nil {
				klog.FromContext(hook).Info("Serving webhook deliveries before every Receiver's Secret was read", "waited", receiverIndexSyncWait)
			}
			cancel()
			if err := listener.Run(hook); err != nil {
				klog.FromContext(hook).Error(err, "The webhook listener stopped")
			}
		}()
		return nil
	})
	return nil
}

// receiverIndexSyncWait is how long the webhook listener waits for the
// index of Receivers to sync before it serves.
const receiverIndexSyncWait = 30 * time.Second

// checkRenderNetwork finds out, once, whether the render processes run
// without a network by the kernel's filter, and says so in the log (and in
// convoy_render_network_filter).
func checkRenderNetwork(children *sandbox.Sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := children.CheckNetworkFilter(ctx); err != nil {
		klog.ErrorS(err, "The render processes run with a network: the kernel's filter could not be installed, only net/http's default transport refuses them")
		return
	}
	klog.V(1).InfoS("The render processes run without a network: the kernel refuses them every Internet socket (seccomp)")
}
