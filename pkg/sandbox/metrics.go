package sandbox

import (
	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// metricSet holds the metrics of the render processes.
var metricSet = metricset.New()

// networkFiltered says whether the render processes run under the kernel's
// network filter (Sandbox.CheckNetworkFilter).
var networkFiltered = metricSet.Gauge(&metrics.GaugeOpts{
	Subsystem: "convoy_render",
	Name:      "network_filter",
	Help: "1 when the processes that template charts and build kustomizations run under the kernel's network filter (a seccomp filter refuses them every Internet socket); " +
		"0 when the kernel cannot install it and only net/http's default transport refuses (the log says why, once at the start).",
	StabilityLevel: metrics.ALPHA,
})

// RegisterMetrics registers the metrics of the render processes with the
// legacy registry that the API server serves on /metrics.
func RegisterMetrics() { metricSet.Register() }
