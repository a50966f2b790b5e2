package metricset_test

import (
	"go/ast"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/gosrc"
)

// built are the functions that build or register a metric, by import path:
// only pkg/metricset calls them, so that every metric is declared in a Set
// and on the reference page.
var built = map[string]func(name string) bool{
	"k8s.io/component-base/metrics": func(name string) bool {
		switch strings.TrimPrefix(name, "New") {
		case "Counter", "CounterVec", "Gauge", "GaugeVec", "GaugeFunc", "Histogram", "HistogramVec",
			"Summary", "SummaryVec", "TimingHistogram", "TimingHistogramVec", "Desc":
			return strings.HasPrefix(name, "New")
		}
		return false
	},
	"k8s.io/component-base/metrics/legacyregistry": func(name string) bool { return strings.Contains(name, "Register") },
	"github.com/prometheus/client_golang/prometheus": func(name string) bool {
		return strings.Contains(name, "Register") || strings.HasPrefix(name, "New")
	},
}

// No code but pkg/metricset builds or registers a metric.
func TestMetricsAreDeclared(t *testing.T) {
	files, err := gosrc.Files("../..", "pkg", "cmd", "internal", "hack")
	require.NoError(t, err)
	var found []string
	for path, f := range files {
		if strings.HasPrefix(path, "pkg/metricset/") {
			continue
		}
		imports := gosrc.Imports(f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if pkg, name, ok := gosrc.Callee(imports, call); ok && built[pkg] != nil && built[pkg](name) {
				found = append(found, path+": "+pkg+"."+name)
			}
			return true
		})
	}
	assert.Empty(t, found, "build metrics with a metricset.Set (Counter, Desc, ...) and register them with its Register")
}
