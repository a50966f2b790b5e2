package source

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	fetchesRunning = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      "convoy_source",
		Name:           "fetches_running",
		Help:           "Requests to registries and repositories (a tag's HEAD, an index, a download) that hold a slot of --max-concurrent-fetches now.",
		StabilityLevel: metrics.ALPHA,
	})
	fetchesWaiting = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      "convoy_source",
		Name:           "fetches_waiting",
		Help:           "Requests to registries and repositories waiting for a slot: of their namespace (--max-concurrent-fetches-per-namespace) or of all (--max-concurrent-fetches).",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerOnce sync.Once

// RegisterMetrics registers the source metrics with the legacy registry that
// the API server serves on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(fetchesRunning, fetchesWaiting) })
}
