package source

import (
	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/metricset"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
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

// fetches and resolves count Fetch and Resolve calls by the source's kind
// and outcome: what operators alert on when sources fail.
var (
	fetches = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem: "convoy_source",
		Name:      "fetches_total",
		Help: "Fetches of Releases' sources (each render asks for one; the content cache may serve it) by kind (configMap, ociRepository, helmRepository, git) " +
			"and outcome (success; failure: the far end failed or was not found; refusal: convoy-apiserver refused it, see convoy_source_refusals_total).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "outcome"})
	resolves = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem: "convoy_source",
		Name:      "resolves_total",
		Help: "Resolutions of Releases' sources to a digest or commit (a tag, a chart version, a Git ref; the resolve cache may serve them) by kind " +
			"(ociRepository, helmRepository, git) and outcome (success, failure, refusal).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "outcome"})
)

// The outcomes of fetches and resolves.
const (
	outcomeSuccess = "success"
	outcomeFailure = "failure"
	outcomeRefusal = "refusal"
)

// outcomeOf is the outcome label of err.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomeSuccess
	case failure.IsRefusal(failure.ReasonOf(err)):
		return outcomeRefusal
	}
	return outcomeFailure
}

// countRefusal counts err when it is a refusal, and returns it.
func countRefusal(err error) error {
	if reason := failure.ReasonOf(err); failure.IsRefusal(reason) {
		refusals.WithLabelValues(reason).Inc()
	}
	return err
}

// refusalReasons are the refusals a fetch or a resolution counts; each
// starts at 0.
var refusalReasons = []string{
	egress.ReasonAddressNotAllowed, sourcefailure.ReasonSourceInvalid, sourcefailure.ReasonArtifactTooLarge, sourcefailure.ReasonIndexTooLarge, sourcefailure.ReasonDigestMismatch,
	sourcefailure.ReasonArtifactUnsupported, credentials.ReasonCredentialsInvalid, failure.ReasonLinkUnsupported, sourcefailure.ReasonGitRefsTooMany, sourcefailure.ReasonGitHostKeyRefused,
	verify.ReasonSignatureUnverified,
}

// RegisterMetrics registers the source metrics with the legacy registry that
// the API server serves on /metrics. Every kind and outcome of fetches and
// resolves, and every refusal, starts at 0, so that a rate is defined from
// the start.
func RegisterMetrics() {
	metricSet.Register()
	for _, reason := range refusalReasons {
		refusals.WithLabelValues(reason)
	}
	for _, outcome := range []string{"success", "failure"} {
		trustRootFetches.WithLabelValues(outcome)
	}
	for _, outcome := range []string{outcomeSuccess, outcomeFailure, outcomeRefusal} {
		for _, kind := range []string{"configMap", "ociRepository", "helmRepository", "git"} {
			fetches.WithLabelValues(kind, outcome)
			if kind != "configMap" {
				resolves.WithLabelValues(kind, outcome)
			}
		}
	}
}
