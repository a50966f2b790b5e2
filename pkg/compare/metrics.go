package compare

import (
	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// metricSet holds the compare metrics.
var metricSet = metricset.New()

var cacheResults = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem:      "convoy_compare",
	Name:           "cache_results_total",
	Help:           "Lookups of the compare cache by result (hit: the compare of an unchanged object reused without a dry run; miss).",
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

// RegisterMetrics registers the compare metrics with the legacy registry that
// the API server serves on /metrics.
func RegisterMetrics() { metricSet.Register() }
