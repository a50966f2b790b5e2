package verify

import (
	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// metricSet holds the metrics of verifications.
var metricSet = metricset.New()

// The outcomes of verifications.
const (
	verifyVerified   = "verified"
	verifyUnverified = "unverified"
	verifyFailure    = "failure"
)

var verifications = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_source",
	Name:      "verifications_total",
	Help: "Verifications of the signatures of Releases' sources (spec.source.ociRepository.verify, git.verify, helmRepository.verify), by provider " +
		"(cosign, git, helm) and outcome (verified; unverified: SignatureUnverified, nothing rendered; failure: the registry, the repository or the Secret " +
		"could not be read). The verdict cache serves repeated ones (convoy_cache_lookups_total{cache=\"signature\"}).",
	StabilityLevel: metrics.ALPHA,
}, []string{"provider", "outcome"})

// RegisterMetrics registers the metrics of verifications with the legacy
// registry that the API server serves on /metrics; every outcome starts
// at 0.
func RegisterMetrics() {
	metricSet.Register()
	for _, provider := range []string{ProviderCosign, ProviderGit, ProviderHelm} {
		for _, outcome := range []string{verifyVerified, verifyUnverified, verifyFailure} {
			verifications.WithLabelValues(provider, outcome)
		}
	}
}

// countVerification counts the outcome of a verification of provider:
// verified, unverified (err is SignatureUnverified) or a failure.
func countVerification(provider string, err error) {
	outcome := verifyVerified
	switch {
	case failure.ReasonOf(err) == ReasonSignatureUnverified:
		outcome = verifyUnverified
	case err != nil:
		outcome = verifyFailure
	}
	verifications.WithLabelValues(provider, outcome).Inc()
}
