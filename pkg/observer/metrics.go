package observer

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// The depth, adds and latency of the drift and health queues
	// (workqueue_depth{name="drift"}, ...), and client-go's request metrics.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

const metricsSubsystem = "convoy_observer"

var (
	passDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pass_duration_seconds",
		Help:           "Duration of one drift or health pass of a Release.",
		Buckets:        metrics.ExponentialBuckets(0.005, 2, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop"})
	passResults = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pass_results_total",
		Help:           "Passes by loop and by the status and reason of the condition they found (InSync or Healthy).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop", "status", "reason"})
	syncRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "sync_requests_total",
		Help:           "Sync requests the observer sent, by loop.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop"})
	celErrors = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "cel_evaluation_errors_total",
		Help:           "Health rules that could not be evaluated (runtime error, cost limit, non-bool result).",
		StabilityLevel: metrics.ALPHA,
	})
	panics = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "panics_total",
		Help:           "Passes that panicked, by loop; each ended as Undetermined or CannotAssess (InternalError), the stack in the log.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"loop"})
	isLeader = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "leader",
		Help:           "1 while this replica holds the lease and runs the loops.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerOnce sync.Once

// RegisterMetrics registers the observer's metrics with the legacy registry
// that the API server serves on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(passDuration, passResults, syncRequests, celErrors, panics, isLeader)
	})
}

// SetLeader records whether this replica runs the loops.
func SetLeader(leading bool) {
	if leading {
		isLeader.Set(1)
	} else {
		isLeader.Set(0)
	}
}
