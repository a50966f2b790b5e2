package source

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
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

// refusals counts the fetches and resolutions that convoy-apiserver refused,
// by reason (isRefusal): what a Release names that it will not reach, read
// or keep. Failures of the far end (unreachable, unauthorized, not found,
// timeout) are not refusals.
var refusals = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_source",
	Name:      "refusals_total",
	Help: "Fetches and resolutions of a Release's source that convoy-apiserver refused, by reason: AddressNotAllowed, SourceInvalid (a URL with credentials, plain http), " +
		"ArtifactTooLarge, IndexTooLarge, DigestMismatch, ArtifactUnsupported, CredentialsInvalid. A rise tells an attack or a misconfiguration without reading every Release.",
	StabilityLevel: metrics.ALPHA,
}, []string{"reason"})

// isRefusal tells the reasons of what convoy-apiserver refused from those of
// a registry or repository that failed.
func isRefusal(reason string) bool {
	switch reason {
	case egress.ReasonAddressNotAllowed, ReasonSourceInvalid, ReasonArtifactTooLarge, ReasonIndexTooLarge,
		ReasonDigestMismatch, ReasonArtifactUnsupported, ReasonCredentialsInvalid:
		return true
	}
	return false
}

// counted counts err when it is a refusal, and returns it.
func counted(err error) error {
	if reason := failure.Reason(err); isRefusal(reason) {
		refusals.WithLabelValues(reason).Inc()
	}
	return err
}

var registerOnce sync.Once

// RegisterMetrics registers the source metrics with the legacy registry that
// the API server serves on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(fetchesRunning, fetchesWaiting, refusals) })
}
