package cluster

import (
	"net/http"
	"strconv"
	"strings"

	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// metricSet holds the target-cluster and snapshot metrics.
var metricSet = metricset.New()

var targetRequests = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem:      "convoy_target",
	Name:           "requests_total",
	Help:           "Requests to target clusters by cluster (\"\" is the local one), operation (read, list, dry_run, discovery, other) and HTTP code (\"error\" when there is no answer).",
	StabilityLevel: metrics.ALPHA,
}, []string{"cluster", "operation", "code"})

var targetResponsesTooLarge = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem:      "convoy_target",
	Name:           "responses_too_large_total",
	Help:           "Answers of target clusters refused for their size (--max-target-response-bytes) by cluster (\"\" is the local one) and operation (read, list, dry_run, discovery, other); a LIST refused makes its pass read the objects one by one.",
	StabilityLevel: metrics.ALPHA,
}, []string{"cluster", "operation"})

var (
	snapshotLookups = metricSet.CounterVec(&metrics.CounterOpts{
		Subsystem:      "convoy_snapshot",
		Name:           "lookups_total",
		Help:           "Asks for a shared metadata-only LIST by how they were answered: listed (this ask sent the LIST), shared (a LIST sent or in flight for an earlier ask), one_by_one (not worth a LIST: the objects are read one by one).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	snapshotListSeconds = metricSet.Histogram(&metrics.HistogramOpts{
		Subsystem:      "convoy_snapshot",
		Name:           "list_duration_seconds",
		Help:           "How long a shared metadata-only LIST took, every page.",
		Buckets:        []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: metrics.ALPHA,
	})
	snapshotWindows = metricSet.HistogramVec(&metrics.HistogramOpts{
		Subsystem:      "convoy_snapshot",
		Name:           "window_get_cost_items",
		Help:           "The choices of the shared metadata-only LISTs, one per window, by choice (list, or one_by_one: the passes of the window read one by one) and by whether the price was measured on the cluster (measured=true) or the default: each observes the price of one GET in listed items that the choice was made with.",
		Buckets:        []float64{5, 10, 20, 35, 50, 75, 100, 200, 500, 1000},
		StabilityLevel: metrics.ALPHA,
	}, []string{"choice", "measured"})
	snapshotListErrors = metricSet.Counter(&metrics.CounterOpts{
		Subsystem:      "convoy_snapshot",
		Name:           "list_errors_total",
		Help:           "Shared metadata-only LISTs that failed (the passes of their window read one by one).",
		StabilityLevel: metrics.ALPHA,
	})
)

// countWindow counts a window's choice, made with a GET priced at ratio
// listed items (measured or the default).
func countWindow(choice string, ratio int, measured bool) {
	snapshotWindows.WithLabelValues(choice, strconv.FormatBool(measured)).Observe(float64(ratio))
}

// targetRefusals counts what convoy-apiserver refuses of a Cluster: a
// kubeconfig it will not use, an address its policy refuses, an answer over
// its limit.
var targetRefusals = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem:      "convoy_target",
	Name:           "refusals_total",
	Help:           "Refusals of what a Cluster's kubeconfig or API server asks for, by reason: ClusterConfigInvalid (a kubeconfig that reads files, runs programs, uses a proxy or is not usable), AddressNotAllowed (an address the policy refuses), ResponseTooLarge (an answer over --max-target-response-bytes). A rise tells an attack or a misconfiguration without reading every Release.",
	StabilityLevel: metrics.ALPHA,
}, []string{"reason"})

// countRefusal counts a refusal of reason.
func countRefusal(reason string) { targetRefusals.WithLabelValues(reason).Inc() }

// RegisterMetrics registers the target-cluster metrics with the legacy
// registry that the API server serves on /metrics.
// Each refusal starts at 0, so that a rate is defined from the start.
func RegisterMetrics() {
	metricSet.Register()
	for _, reason := range refusalReasons {
		targetRefusals.WithLabelValues(reason)
	}
}

// refusalReasons are the refusals of a Cluster that countRefusal counts.
var refusalReasons = []string{ReasonClusterConfigInvalid, egress.ReasonAddressNotAllowed, ReasonResponseTooLarge}

// countingTransport counts the requests to one target cluster.
type countingTransport struct {
	cluster string
	next    http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	targetRequests.WithLabelValues(t.cluster, operation(req), code).Inc()
	if _, ok := failure.Find(err, egress.ReasonAddressNotAllowed); ok {
		countRefusal(egress.ReasonAddressNotAllowed)
	}
	return resp, err
}

// operation tells a read, a list, a server-side apply dry run and discovery
// apart.
func operation(req *http.Request) string {
	path := strings.TrimSuffix(req.URL.Path, "/")
	switch {
	case req.Method == http.MethodPatch && req.URL.Query().Get("dryRun") == "All":
		return "dry_run"
	case req.Method == http.MethodGet && (path == "/api" || path == "/apis" || strings.Count(path, "/") <= 3 && strings.HasPrefix(path, "/apis/") || path == "/api/v1"):
		return "discovery"
	case req.Method == http.MethodGet && isCollection(path):
		return "list"
	case req.Method == http.MethodGet:
		return "read"
	}
	return "other"
}

// isCollection reports whether path names a collection: /api/v1/R,
// /api/v1/namespaces/NS/R, /apis/G/V/R or /apis/G/V/namespaces/NS/R (not
// namespaces themselves, whose items are one segment deeper).
func isCollection(path string) bool {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) > 0 && parts[0] == "apis" {
		parts = parts[1:] // the group
	}
	if len(parts) < 3 {
		return false
	}
	rest := parts[2:] // after api(s)/(group/)version
	switch len(rest) {
	case 1:
		return true // a cluster-scoped collection, or namespaces
	case 3:
		return rest[0] == "namespaces" // namespaces/NS/R
	}
	return false
}
