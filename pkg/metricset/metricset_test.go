package metricset

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// runs makes the names of each run of TestSet new: a metric is registered
// once per process, and -count=N runs the test N times.
var runs atomic.Int32

type collector struct {
	metrics.BaseStableCollector
	desc *metrics.Desc
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- c.desc }

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	ch <- metrics.NewLazyConstMetric(c.desc, metrics.GaugeValue, 1, "a")
}

// A Set records each metric it builds, with the stability its constructor
// defaults to, and registers them all, once; All lists them by name.
func TestSet(t *testing.T) {
	n := runs.Add(1)
	p := fmt.Sprintf("metricset_test%d_", n)
	s := New()
	c := s.Counter(&metrics.CounterOpts{Name: p + "c", Help: "a counter"})
	cv := s.CounterVec(&metrics.CounterOpts{Namespace: "metricset", Subsystem: fmt.Sprintf("test%d", n), Name: "cv", Help: "counters", StabilityLevel: metrics.STABLE}, []string{"x", "y"})
	g := s.Gauge(&metrics.GaugeOpts{Name: p + "g", Help: "a gauge"})
	gv := s.GaugeVec(&metrics.GaugeOpts{Name: p + "gv", Help: "gauges"}, []string{"x"})
	h := s.Histogram(&metrics.HistogramOpts{Name: p + "h", Help: "a histogram"})
	hv := s.HistogramVec(&metrics.HistogramOpts{Name: p + "hv", Help: "histograms"}, []string{"x"})
	s.Custom(&collector{desc: s.Desc(Gauge, p+"custom", "a custom one", []string{"x"}, "")})

	want := []Metric{
		{Name: p + "c", Type: Counter, Help: "a counter", Stability: metrics.ALPHA},
		{Name: p + "cv", Type: Counter, Labels: []string{"x", "y"}, Help: "counters", Stability: metrics.STABLE},
		{Name: p + "g", Type: Gauge, Help: "a gauge", Stability: metrics.ALPHA},
		{Name: p + "gv", Type: Gauge, Labels: []string{"x"}, Help: "gauges", Stability: metrics.ALPHA},
		{Name: p + "h", Type: Histogram, Help: "a histogram", Stability: metrics.ALPHA},
		{Name: p + "hv", Type: Histogram, Labels: []string{"x"}, Help: "histograms", Stability: metrics.ALPHA},
		{Name: p + "custom", Type: Gauge, Labels: []string{"x"}, Help: "a custom one", Stability: metrics.ALPHA},
	}
	assert.Equal(t, want, s.Metrics())
	all := All()
	for _, m := range want {
		assert.Contains(t, all, m)
	}
	for i := 1; i < len(all); i++ {
		assert.Less(t, all[i-1].Name, all[i].Name, "All is by name")
	}

	c.Inc()
	v, err := testutil.GetCounterMetricValue(c)
	require.NoError(t, err)
	assert.Zero(t, v, "a metric counts nothing before Register")

	s.Register()
	s.Register()
	c.Inc()
	cv.WithLabelValues("1", "2").Inc()
	g.Set(2)
	gv.WithLabelValues("1").Set(3)
	h.Observe(1)
	hv.WithLabelValues("1").Observe(1)
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	got := map[string]string{}
	for _, f := range families {
		got[f.GetName()] = f.GetType().String()
	}
	for _, m := range want {
		assert.Equal(t, map[Type]string{Counter: "COUNTER", Gauge: "GAUGE", Histogram: "HISTOGRAM"}[m.Type], got[m.Name], m.Name)
	}
}

func TestLibraryOf(t *testing.T) {
	for name, want := range map[string]string{
		"workqueue_depth":                  "workqueue_",
		"apiserver_request_total":          "apiserver_",
		"registered_metrics_total":         "registered_metrics_total",
		"go_goroutines":                    "go_",
		"convoy_build_info":                "",
		"authenticated_user_requests":      "authenticated_user_requests",
		"rest_client_request_duration_sec": "rest_client_",
	} {
		l, ok := LibraryOf(name)
		assert.Equal(t, want != "", ok, name)
		assert.Equal(t, want, l.Prefix, name)
	}
}
