package compare

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var cacheResults = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem:      "convoy_compare",
	Name:           "cache_results_total",
	Help:           "Lookups of the compare cache by result (hit: the compare of an unchanged object reused without a dry run; miss).",
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

var registerOnce sync.Once

// RegisterMetrics registers the compare metrics with the legacy registry that
// the API server serves on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(cacheResults) })
}
