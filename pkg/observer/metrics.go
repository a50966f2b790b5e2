package observer

import (
	"sync/atomic"

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
)

// RegisterMetrics registers the observer's metrics with the legacy registry
// that the API server serves on /metrics.
func RegisterMetrics() { metricSet.Register() }

// SetLeader records whether this replica runs the loops.
func SetLeader(leading bool) {
	if leading {
		isLeader.Set(1)
	} else {
		isLeader.Set(0)
	}
}

// releaseConditionDesc is one series per Release and condition, like Argo
// CD's argocd_app_info: `convoy_release_condition{type="InSync",status="False"} == 1`
// selects the drifted Releases.
var releaseConditionDesc = metricSet.Desc(metricset.Gauge, "convoy_release_condition",
	"1 for each condition of each Release, with its type, status and reason as labels; reported by the replica that runs the loops.",
	[]string{"namespace", "name", "type", "status", "reason"}, metrics.ALPHA)

// conditions reports the conditions of the Releases in the informer cache of
// the running loops; it reports nothing while this replica does not run them,
// so that replicas never report a Release twice.
var conditions = &conditionCollector{}

func init() { metricSet.Custom(conditions) }

type conditionCollector struct {
	metrics.BaseStableCollector
	releases atomic.Pointer[convoylisters.ReleaseLister]
}

// setReleases makes the collector read lister; nil stops it.
func (c *conditionCollector) setReleases(lister convoylisters.ReleaseLister) {
	if lister == nil {
		c.releases.Store(nil)
		return
	}
	c.releases.Store(&lister)
}

func (c *conditionCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- releaseConditionDesc
}

func (c *conditionCollector) CollectWithStability(ch chan<- metrics.Metric) {
	lister := c.releases.Load()
	if lister == nil {
		return
	}
	releases, err := (*lister).List(labels.Everything())
	if err != nil {
		return
	}
	for _, r := range releases {
		for _, cond := range r.Status.Conditions {
			ch <- metrics.NewLazyConstMetric(releaseConditionDesc, metrics.GaugeValue, 1,
				r.Namespace, r.Name, cond.Type, string(cond.Status), cond.Reason)
		}
	}
}
