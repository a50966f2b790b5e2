package observer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/contest"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	convoyinformers "github.com/kumodo/convoy-apiserver/pkg/generated/informers/externalversions"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/inventory"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
)

// Config is what the observer's loops run on.
type Config struct {
	Convoy convoyclient.Interface
	// LeaseKube is a clientset of the cluster convoy-apiserver runs in, of
	// its own, that renews the Lease: no pass nor Event can make a renewal
	// wait for its rate limiter.
	LeaseKube kubernetes.Interface
	// Verdicts reuses the rules' verdicts of objects a LIST saw unchanged;
	// nil: every object with a rule is read.
	Verdicts  *health.VerdictCache
	Checker   *drift.Checker
	Targets   *cluster.Provider
	Requester *requests.Requester
	// Contests are the settings of the memory of the fields another manager
	// takes back after each self-heal. Each term of leadership has a memory
	// of its own, seeded from the Releases' status.selfHeal.
	Contests contest.Options
	Recorder events.EventRecorder
	Compiler *health.Compiler
	Clock    clock.PassiveClock

	Resync        time.Duration
	DriftWorkers  int
	HealthWorkers int

	// LeaderElection says whether and how replicas elect the one that runs
	// the loops. Every replica serves the API either way.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
}

// Observer runs the drift and health loops, in the replica that holds the
// lease when leader election is on.
type Observer struct {
	cfg      Config
	identity string

	// leading is set while this replica should run the loops: it holds the
	// lease, or leader election is off. running is set while its loops run
	// on synced informers.
	leading, running atomic.Bool
}

// New returns an Observer.
func New(cfg Config) *Observer {
	host, _ := os.Hostname()
	o := &Observer{cfg: cfg, identity: host + "_" + string(uuid.NewUUID())}
	setIdentity(o.identity)
	o.leading.Store(!cfg.LeaderElection.LeaderElect)
	return o
}

// Ready returns an error while this replica should run the loops (it leads,
// or leader election is off) and they are not running yet or any more: the
// readyz check "observer". A replica that does not lead is ready: it serves
// the API.
func (o *Observer) Ready() error {
	if o.leading.Load() && !o.running.Load() {
		return errors.New("this replica runs the drift and health loops, and they are not running")
	}
	return nil
}

// Run runs the loops until ctx is done. With leader election it campaigns
// for the lease, runs the loops while it holds it, stops them cleanly when it
// loses it, and campaigns again; it gives the lease up when ctx is done.
func (o *Observer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	le := o.cfg.LeaderElection
	if !le.LeaderElect {
		o.setLeading(true)
		return o.runLoops(ctx)
	}
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		o.cfg.LeaseKube.CoreV1(), o.cfg.LeaseKube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: o.identity})
	if err != nil {
		return fmt.Errorf("creating the lease lock: %w", err)
	}
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   le.LeaseDuration.Duration,
			RenewDeadline:   le.RenewDeadline.Duration,
			RetryPeriod:     le.RetryPeriod.Duration,
			ReleaseOnCancel: true,
			Name:            le.ResourceName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leading context.Context) {
					logger.Info("Leading: starting the loops", "identity", o.identity)
					o.setLeading(true)
					if err := o.runLoops(leading); err != nil {
						logger.Error(err, "Running the loops")
					}
				},
				OnStoppedLeading: func() {
					o.setLeading(false)
					logger.Info("Not leading: the loops stopped", "identity", o.identity)
				},
				OnNewLeader: func(identity string) {
					if identity != o.identity {
						logger.Info("Another replica leads", "leader", identity)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("creating the leader elector: %w", err)
		}
		elector.Run(ctx)
	}
	return nil
}

// setLeading records whether this replica should run the loops.
func (o *Observer) setLeading(leading bool) {
	o.leading.Store(leading)
	SetLeader(leading)
}

// runLoops builds fresh informers and loops (an informer cannot start twice)
// and runs them until ctx is done; the observer is running from the sync of
// the informers to the end of the loops.
func (o *Observer) runLoops(ctx context.Context) error {
	c := o.cfg
	factory := convoyinformers.NewSharedInformerFactoryWithOptions(c.Convoy, c.Resync, convoyinformers.WithTransform(stripManagedFields))
	v1 := factory.Convoy().V1alpha1()
	status := NewStatusWriter(c.Convoy.ConvoyV1alpha1(), c.Recorder, c.Clock)
	if timers, ok := c.Clock.(clock.WithDelayedExecution); ok {
		status.WithHold(StatusHold, timers)
	}
	// Writes held when the term ends are dropped: the next leader writes.
	defer status.Close()
	// A memory of this term only: one kept from an earlier term would miss
	// what another leader wrote in between, and not be seeded again.
	contests := contest.New(c.Contests)
	defer contestedFields.Set(0)
	driftLoop, err := NewDriftLoop(v1.Releases(), v1.ReleaseInventories(), c.Checker, status, c.Requester, contests)
	if err != nil {
		return err
	}
	healthLoop, err := NewHealthLoop(HealthInformers{
		Releases: v1.Releases(), Inventories: v1.ReleaseInventories(),
		Globals: v1.GlobalHealthRuleSets(), Locals: v1.HealthRuleSets(),
	}, c.Targets, c.Compiler, c.Verdicts, inventory.NewWriter(c.Convoy.ConvoyV1alpha1()), status, c.Requester, c.Clock)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the informer of %v did not sync", typ)
		}
	}
	o.running.Store(true)
	defer o.running.Store(false)
	releases.set(&running{releases: v1.Releases().Lister(), inventories: v1.ReleaseInventories().Lister(),
		queues: []*passQueue{&driftLoop.passQueue, &healthLoop.passQueue}})
	defer releases.set(nil)
	var wg sync.WaitGroup
	wg.Go(func() { driftLoop.Run(ctx, c.DriftWorkers) })
	wg.Go(func() { healthLoop.Run(ctx, c.HealthWorkers) })
	wg.Wait()
	return nil
}

// stripManagedFields is the informers' transform: the loops never read the
// managedFields of a Release, an inventory or a rule set, and they are a
// large part of what the informers keep per Release (an entry per manager:
// the spec's, the controller's status, convoy-observe's conditions; an
// inventory's lists a field per entry). An object that is not one (a
// tombstone) is left as it is.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
