package receiver

import (
	"slices"

	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// metricSet holds the metrics of the listener.
var metricSet = metricset.New()

// typeUnknown is the type label of a delivery answered before its
// Receiver is known (a path of none, a method other than POST), or of a
// Receiver of a type the listener does not know.
const typeUnknown = "unknown"

var deliveries = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_receiver",
	Name:      "deliveries_total",
	Help: "Webhook deliveries answered by the Receivers' listener (--receiver-bind-address), by the Receiver's type (unknown before its path is looked up or for a path of none) " +
		"and outcome: accepted (verified, the Releases it names asked to refresh), ping, ignored (an event not in spec.events, or nothing to refresh), " +
		"duplicate (a delivery id seen within --receiver-dedup-window), unknown_path, method_not_allowed, rate_limited, busy (--receiver-max-in-flight), " +
		"too_large, unauthorized (signature or token), malformed (a body that does not parse), error (a list or a refresh failed, or the handler panicked).",
	StabilityLevel: metrics.ALPHA,
}, []string{"type", "outcome"})

var refreshes = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_receiver",
	Name:      "refreshes_total",
	Help: "Refresh requests of Releases recorded on behalf of webhook deliveries, by the Receiver's type " +
		"(a request joined to another of the same Release within a second counts too).",
	StabilityLevel: metrics.ALPHA,
}, []string{"type"})

// RegisterMetrics registers the metrics of the listener with the legacy
// registry that the API server serves on /metrics; every pair of labels
// starts at 0.
func RegisterMetrics() {
	metricSet.Register()
	for _, t := range typeLabels() {
		for _, o := range outcomes {
			deliveries.WithLabelValues(t, string(o))
		}
		if t != typeUnknown {
			refreshes.WithLabelValues(t)
		}
	}
}

// typeLabels are the values of the type label.
func typeLabels() []string {
	out := make([]string, 0, len(webhook.Types)+1)
	for _, t := range webhook.Types {
		out = append(out, string(t))
	}
	return append(out, typeUnknown)
}

// typeLabel is the type label of t: unknown for a type the listener does
// not know, so that the label stays bounded.
func typeLabel(t webhook.Type) string {
	if slices.Contains(webhook.Types, t) {
		return string(t)
	}
	return typeUnknown
}
