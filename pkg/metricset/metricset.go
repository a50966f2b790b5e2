// Package metricset declares the metrics of convoy-apiserver. A package
// builds its metrics with the methods of its Set, which registers them
// together, once, with the legacy registry that the API server serves on
// /metrics, and records what the reference page says of each (All). No
// other package builds or registers a metric (a test checks this by AST),
// so that docs/reference/metrics.md, which hack/gen-docs writes from All,
// names every metric the server registers.
//
//	var metricSet = metricset.New()
//
//	var refusals = metricSet.CounterVec(&metrics.CounterOpts{...}, []string{"reason"})
//
//	func RegisterMetrics() { metricSet.Register() }
package metricset

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Type is the type of a metric, as Prometheus names it.
type Type string

// Types of metrics.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Metric is what the reference page says of one metric.
type Metric struct {
	// Name is the fully qualified name.
	Name string
	// Type is the metric's type.
	Type Type
	// Labels are the names of its variable labels, in order.
	Labels []string
	// Help is its help text, without the stability prefix.
	Help string
	// Stability is its stability level (ALPHA, STABLE, ...).
	Stability metrics.StabilityLevel
}

// Set is the metrics of one package: built with its methods, registered by
// Register.
type Set struct {
	once sync.Once

	mu         sync.Mutex
	collectors []metrics.Registerable
	custom     []metrics.StableCollector
	declared   []Metric
}

var sets = struct {
	sync.Mutex
	all []*Set
}{}

// New returns an empty Set, which All lists from now on. A package makes
// one, in a package-level variable.
func New() *Set {
	s := &Set{}
	sets.Lock()
	defer sets.Unlock()
	sets.all = append(sets.all, s)
	return s
}

// Counter builds a counter of s.
func (s *Set) Counter(opts *metrics.CounterOpts) *metrics.Counter {
	return add(s, metrics.NewCounter(opts), Counter, (*metrics.KubeOpts)(opts), nil)
}

// CounterVec builds a counter of s with labels.
func (s *Set) CounterVec(opts *metrics.CounterOpts, labels []string) *metrics.CounterVec {
	return add(s, metrics.NewCounterVec(opts, labels), Counter, (*metrics.KubeOpts)(opts), labels)
}

// Gauge builds a gauge of s.
func (s *Set) Gauge(opts *metrics.GaugeOpts) *metrics.Gauge {
	return add(s, metrics.NewGauge(opts), Gauge, (*metrics.KubeOpts)(opts), nil)
}

// GaugeVec builds a gauge of s with labels.
func (s *Set) GaugeVec(opts *metrics.GaugeOpts, labels []string) *metrics.GaugeVec {
	return add(s, metrics.NewGaugeVec(opts, labels), Gauge, (*metrics.KubeOpts)(opts), labels)
}

// Histogram builds a histogram of s.
func (s *Set) Histogram(opts *metrics.HistogramOpts) *metrics.Histogram {
	return add(s, metrics.NewHistogram(opts), Histogram, histogramOpts(opts), nil)
}

// HistogramVec builds a histogram of s with labels.
func (s *Set) HistogramVec(opts *metrics.HistogramOpts, labels []string) *metrics.HistogramVec {
	return add(s, metrics.NewHistogramVec(opts, labels), Histogram, histogramOpts(opts), labels)
}

// histogramOpts returns what the page says of a histogram's options.
func histogramOpts(o *metrics.HistogramOpts) *metrics.KubeOpts {
	return &metrics.KubeOpts{Namespace: o.Namespace, Subsystem: o.Subsystem, Name: o.Name, Help: o.Help, StabilityLevel: o.StabilityLevel}
}

// add records c, a metric of type typ built from opts (after its
// constructor set the default stability), in s, and returns it.
func add[C metrics.Registerable](s *Set, c C, typ Type, opts *metrics.KubeOpts, labels []string) C {
	s.record(c, Metric{Name: metrics.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name), Type: typ, Labels: labels, Help: opts.Help, Stability: opts.StabilityLevel})
	return c
}

// Desc declares a metric of type typ that a custom collector of s reports
// (see Custom), and returns its descriptor.
func (s *Set) Desc(typ Type, fqName, help string, labels []string, stability metrics.StabilityLevel) *metrics.Desc {
	d := metrics.NewDesc(fqName, help, labels, nil, stability, "")
	if stability == "" {
		stability = metrics.ALPHA // NewDesc's default
	}
	s.record(nil, Metric{Name: fqName, Type: typ, Labels: labels, Help: help, Stability: stability})
	return d
}

// Custom adds a collector that reports metrics declared with Desc; Register
// registers it with the others.
func (s *Set) Custom(c metrics.StableCollector) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.custom = append(s.custom, c)
}

// record records m in s, and its collector unless it is nil (a metric of a
// custom collector).
func (s *Set) record(c metrics.Registerable, m Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c != nil {
		s.collectors = append(s.collectors, c)
	}
	m.Labels = slices.Clone(m.Labels)
	s.declared = append(s.declared, m)
}

// Register registers the metrics of s with the legacy registry, the first
// time it is called; a metric counts nothing before.
func (s *Set) Register() {
	s.once.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		legacyregistry.MustRegister(s.collectors...)
		if len(s.custom) > 0 {
			legacyregistry.CustomMustRegister(s.custom...)
		}
	})
}

// Metrics returns the metrics declared in s, in the order they were.
func (s *Set) Metrics() []Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Metric, len(s.declared))
	for i, m := range s.declared {
		m.Labels = slices.Clone(m.Labels)
		out[i] = m
	}
	return out
}

// All returns the metrics of every Set of the program (of the packages it
// links), by name.
func All() []Metric {
	sets.Lock()
	all := slices.Clone(sets.all)
	sets.Unlock()
	var out []Metric
	for _, s := range all {
		out = append(out, s.Metrics()...)
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Library is a family of metrics that a Kubernetes library of the server
// registers, named by the prefix of their names.
type Library struct {
	// Prefix starts the name of each of its metrics, or is the name of one.
	Prefix string
	// From names the library and says what its metrics measure.
	From string
}

// Libraries are the metrics the server exports beside those of All: those of
// the Kubernetes and Prometheus libraries it is built on, by prefix. Their
// own documentation describes them.
var Libraries = []Library{
	{"aggregator_", "k8s.io/apiserver: aggregated discovery of the server's API groups"},
	{"apiserver_", "k8s.io/apiserver: the requests the server answers (latency, size, in flight), their admission, audit, authentication and authorization, watches and the generic server's own state"},
	{"authenticated_user_requests", "k8s.io/apiserver: requests by authenticated user"},
	{"authentication_", "k8s.io/apiserver: authentication attempts, latency and token cache"},
	{"cardinality_enforcement_unexpected_categorizations_total", "k8s.io/component-base: the metrics framework's own"},
	{"disabled_metrics_total", "k8s.io/component-base: the metrics framework's own"},
	{"field_validation_request_duration_seconds", "k8s.io/apiserver: field validation of requests"},
	{"go_", "the Prometheus Go client: the Go runtime (memory, GC, goroutines, scheduler)"},
	{"hidden_metrics_total", "k8s.io/component-base: the metrics framework's own"},
	{"kubernetes_", "k8s.io/component-base: build information, feature gates and health checks (/healthz, /livez, /readyz)"},
	{"process_", "the Prometheus Go client: the process (CPU, memory, file descriptors, start time)"},
	{"registered_metrics_total", "k8s.io/component-base: the metrics framework's own"},
	{"rest_client_", "k8s.io/client-go: the requests of the server's clients, to the kube-apiserver and to target clusters"},
	{"workqueue_", "k8s.io/client-go: the work queues, among them those of the drift and health loops (name=\"drift\", name=\"health\")"},
}

// LibraryOf returns the Library whose prefix starts name.
func LibraryOf(name string) (Library, bool) {
	for _, l := range Libraries {
		if strings.HasPrefix(name, l.Prefix) {
			return l, true
		}
	}
	return Library{}, false
}
