package observer

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"

	// The depth, adds and latency of the drift and health queues
	// (workqueue_depth{name="drift"}, ...), and client-go's request metrics.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"

	convoylisters "github.com/kumodo/convoy-apiserver/pkg/generated/listers/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

const metricsSubsystem = "convoy_observer"

// metricSet holds the observer's metrics.
var metricSet = metricset.New()

var (
	passDuration = metricSet.HistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pass_duration_seconds",
		Help:           "Duration of one drift or health pass of a Release.",
		Buckets:        metrics.ExponentialBuckets(0.005, 2, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop"})
	passResults = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pass_results_total",
		Help:           "Passes by loop and by the status and reason of the condition they found (InSync or Healthy).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop", "status", "reason"})
	syncRequests = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "sync_requests_total",
		Help:           "Sync requests the observer sent, by loop.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop"})
	refreshesHandled = metricSet.Counter(&metrics.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "refreshes_handled_total",
		Help: "Refresh requests (POST releases/NAME/refresh, the annotation convoy.kumodo.io/refresh-requested-at) the drift loop handled: " +
			"passes that resolved the source again whatever --source-resolve-max-age. Requests that came within RefreshDelay of each other count once.",
		StabilityLevel: metrics.ALPHA,
	})
	statusRefusals = metricSet.Counter(&metrics.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "status_refusals_total",
		Help: "Status writes the API server refused for a value that came from outside the observer (a refresh annotation, a revision a registry named): " +
			"the condition was written with the last accepted values instead (Warning Event StatusRefused).",
		StabilityLevel: metrics.ALPHA,
	})
	statusHolds = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "status_holds_total",
		Help: "Status writes held because they only moved a condition's observedGeneration while the other loop had not passed the new generation yet " +
			"(held), and those written on their own because the other loop's pass did not come within StatusHold (expired): " +
			"held less expired were written with the other loop's, one apply for both.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome"})
	celErrors = metricSet.Counter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "cel_evaluation_errors_total",
		Help:           "Health rules that could not be evaluated (runtime error, cost limit, non-bool result).",
		StabilityLevel: metrics.ALPHA,
	})
	panics = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "panics_total",
		Help:           "Passes that panicked, by loop; each ended as Undetermined or CannotAssess (InternalError), the stack in the log.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop"})
	contestedFields = metricSet.Gauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "contested_fields",
		Help:           "Fields another manager takes back after each self-heal (contested), over all Releases; their self-heal backs off.",
		StabilityLevel: metrics.ALPHA,
	})
	isLeader = metricSet.Gauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "leader",
		Help:           "1 while this replica holds the lease and runs the loops.",
		StabilityLevel: metrics.ALPHA,
	})
	leaderTransitions = metricSet.Counter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "leader_transitions_total",
		Help:           "Times this replica started or stopped running the loops (took or lost the lease).",
		StabilityLevel: metrics.ALPHA,
	})
	identityInfo = metricSet.GaugeVec(&metrics.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "identity_info",
		Help: "1, with this replica's identity in the lease (hostname_uuid) as a label: " +
			"convoy_observer_leader * on (job, instance) group_left (identity) convoy_observer_identity_info names the leader.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"identity"})
)

// RegisterMetrics registers the observer's metrics with the legacy registry
// that the API server serves on /metrics; each loop's sync requests and
// panics start at 0, so that a rate is defined from the start.
func RegisterMetrics() {
	metricSet.Register()
	for _, loop := range []string{"drift", "health"} {
		syncRequests.WithLabelValues(loop)
		panics.WithLabelValues(loop)
	}
}

// leading is the last value SetLeader set, to count transitions.
var leading atomic.Bool

// SetLeader records whether this replica runs the loops.
func SetLeader(lead bool) {
	if leading.Swap(lead) != lead {
		leaderTransitions.Inc()
	}
	if lead {
		isLeader.Set(1)
	} else {
		isLeader.Set(0)
	}
}

// setIdentity records this replica's identity in the lease.
func setIdentity(identity string) { identityInfo.WithLabelValues(identity).Set(1) }

// releaseConditionDesc is one series per Release and condition, like Argo
// CD's argocd_app_info: `convoy_release_condition{type="InSync",status="False"} == 1`
// selects the drifted Releases.
var releaseConditionDesc = metricSet.Desc(metricset.Gauge, "convoy_release_condition",
	"1 for each condition of each Release, with its type, status and reason as labels; reported by the replica that runs the loops.",
	[]string{"namespace", "name", "type", "status", "reason"}, metrics.ALPHA)

// backingOffDesc is one series per Release whose self-heal backs off: a
// series at 0 for each of the others would be a third of a fleet's series
// (10,000 of 30,000 at 10,000 Releases) for a rare state.
var backingOffDesc = metricSet.Desc(metricset.Gauge, "convoy_release_selfheal_backing_off",
	"1 for each Release whose self-heal backs off because every drifted field is contested (status.selfHeal.backoff is set); the other Releases have no series; reported by the replica that runs the loops.",
	[]string{"namespace", "name"}, metrics.ALPHA)

// latenessDesc is one series per loop.
var latenessDesc = metricSet.Desc(metricset.Gauge, "convoy_observer_pass_lateness_seconds",
	"How long ago the most overdue pass of the loop was due (its Release's interval, or the re-check a pass asked for, after the last pass); 0 when none is overdue. "+
		"A loop that keeps up with its intervals stays near 0; reported by the replica that runs the loops.",
	[]string{"loop"}, metrics.ALPHA)

// The wait for the workers, per loop (pkg/fairqueue, pkg/park): no series
// per namespace.
var (
	oldestWaitingDesc = metricSet.Desc(metricset.Gauge, "convoy_observer_queue_oldest_seconds",
		"How long the pass that has waited longest for a worker of the loop has waited (due or asked for, not started); 0 when none waits. "+
			"workqueue_depth{name=LOOP} is how many wait; reported by the replica that runs the loops.",
		[]string{"loop"}, metrics.ALPHA)
	atShareDesc = metricSet.Desc(metricset.Gauge, "convoy_observer_namespaces_at_share",
		"Namespaces whose passes wait while they run on their share of the loop's workers (half): they get a worker only when no other namespace below its share has a pass waiting. "+
			"Reported by the replica that runs the loops.",
		[]string{"loop"}, metrics.ALPHA)
	parkedDesc = metricSet.Desc(metricset.Gauge, "convoy_observer_passes_parked",
		"Releases whose pass gave its worker back to wait for a request to a registry or a repository (parked); the request's end starts their next pass. "+
			"Reported by the replica that runs the loops.",
		[]string{"loop"}, metrics.ALPHA)
)

// objectsDesc counts the objects the loops observe.
var objectsDesc = metricSet.Desc(metricset.Gauge, "convoy_observer_objects",
	"Objects the Releases applied (their ReleaseInventories' entries), which the loops observe: the denominator of API requests per object; reported by the replica that runs the loops.",
	nil, metrics.ALPHA)

// releases reports what the running loops know of the Releases: their
// conditions, their self-heal, the objects they applied, and how late each
// loop is. It reports nothing while this replica does not run the loops, so
// that replicas never report a Release twice.
var releases = &releaseCollector{}

func init() { metricSet.Custom(releases) }

// running is what releaseCollector reads while the loops run.
type running struct {
	releases    convoylisters.ReleaseLister
	inventories convoylisters.ReleaseInventoryLister
	queues      []*passQueue
}

type releaseCollector struct {
	metrics.BaseStableCollector
	running atomic.Pointer[running]
}

// set makes the collector read r; nil stops it.
func (c *releaseCollector) set(r *running) { c.running.Store(r) }

func (c *releaseCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- releaseConditionDesc
	ch <- backingOffDesc
	ch <- latenessDesc
	ch <- oldestWaitingDesc
	ch <- atShareDesc
	ch <- parkedDesc
	ch <- objectsDesc
}

func (c *releaseCollector) CollectWithStability(ch chan<- metrics.Metric) {
	r := c.running.Load()
	if r == nil {
		return
	}
	now := time.Now()
	for _, q := range r.queues {
		ch <- metrics.NewLazyConstMetric(latenessDesc, metrics.GaugeValue, q.due.lateness(now).Seconds(), q.name)
		wait := q.fair.Stats()
		ch <- metrics.NewLazyConstMetric(oldestWaitingDesc, metrics.GaugeValue, wait.Oldest.Seconds(), q.name)
		ch <- metrics.NewLazyConstMetric(atShareDesc, metrics.GaugeValue, float64(wait.AtShare), q.name)
		ch <- metrics.NewLazyConstMetric(parkedDesc, metrics.GaugeValue, float64(q.spots.parked()), q.name)
	}
	if inventories, err := r.inventories.List(labels.Everything()); err == nil {
		objects := 0
		for _, inv := range inventories {
			objects += len(inv.Spec.Entries)
		}
		ch <- metrics.NewLazyConstMetric(objectsDesc, metrics.GaugeValue, float64(objects))
	}
	list, err := r.releases.List(labels.Everything())
	if err != nil {
		return
	}
	for _, rel := range list {
		for _, cond := range rel.Status.Conditions {
			ch <- metrics.NewLazyConstMetric(releaseConditionDesc, metrics.GaugeValue, 1,
				rel.Namespace, rel.Name, cond.Type, string(cond.Status), cond.Reason)
		}
		if sh := rel.Status.SelfHeal; sh != nil && sh.Backoff != nil {
			ch <- metrics.NewLazyConstMetric(backingOffDesc, metrics.GaugeValue, 1, rel.Namespace, rel.Name)
		}
	}
}
