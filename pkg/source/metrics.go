package source

import (
	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// metricSet holds the source metrics.
var metricSet = metricset.New()

var (
	fetchesRunning = metricSet.Gauge(&metrics.GaugeOpts{
		Subsystem:      "convoy_source",
		Name:           "fetches_running",
		Help:           "Requests to registries and repositories (a tag's HEAD, an index, a download) that hold a slot of --max-concurrent-fetches now.",
		StabilityLevel: metrics.ALPHA,
	})
	fetchesWaiting = metricSet.Gauge(&metrics.GaugeOpts{
		Subsystem:      "convoy_source",
		Name:           "fetches_waiting",
		Help:           "Requests to registries and repositories waiting for a slot: of their namespace (--max-concurrent-fetches-per-namespace) or of all (--max-concurrent-fetches).",
		StabilityLevel: metrics.ALPHA,
	})
)

// refusals counts the fetches and resolutions that convoy-apiserver refused,
// by reason (failure.IsRefusal): what a Release names that it will not reach, read
// or keep. Failures of the far end (unreachable, unauthorized, not found,
// timeout) are not refusals.
var refusals = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_source",
	Name:      "refusals_total",
	Help: "Fetches and resolutions of a Release's source that convoy-apiserver refused, by reason: AddressNotAllowed, SourceInvalid (a URL with credentials, plain http), " +
		"ArtifactTooLarge, IndexTooLarge, DigestMismatch, ArtifactUnsupported, CredentialsInvalid. A rise tells an attack or a misconfiguration without reading every Release.",
	StabilityLevel: metrics.ALPHA,
}, []string{"reason"})

// counted counts err when it is a refusal, and returns it.
func counted(err error) error {
	if reason := failure.ReasonOf(err); failure.IsRefusal(reason) {
		refusals.WithLabelValues(reason).Inc()
	}
	return err
}

// RegisterMetrics registers the source metrics with the legacy registry that
// the API server serves on /metrics.
func RegisterMetrics() { metricSet.Register() }
