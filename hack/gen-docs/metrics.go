package main

import (
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// MetricsPage returns metrics.md: the metrics of convoy-apiserver, by name,
// then the families of the libraries it exports beside them.
func MetricsPage(all []metricset.Metric, libraries []metricset.Library) string {
	b := page("Metrics", "convoy-apiserver serves its metrics on `/metrics` in the Prometheus text format.")
	b.WriteString("## convoy-apiserver\n\n")
	b.WriteString("The metrics of convoy-apiserver, as its packages declare them (pkg/metricset). ")
	b.WriteString("The help text that `/metrics` serves begins with the stability level, such as `[ALPHA]`.\n\n")
	rows := make([][]string, 0, len(all))
	for _, m := range all {
		rows = append(rows, []string{code(m.Name), string(m.Type), cell(strings.Join(m.Labels, ", ")), string(m.Stability), cell(m.Help)})
	}
	table(b, []string{"name", "type", "labels", "stability", "help"}, rows)

	b.WriteString("## Kubernetes and Prometheus libraries\n\n")
	b.WriteString("The libraries convoy-apiserver is built on export their own metrics too; each family is named by the prefix of its metrics' names. ")
	b.WriteString("Their own documentation describes them.\n\n")
	rows = rows[:0]
	for _, l := range libraries {
		rows = append(rows, []string{code(l.Prefix), cell(l.From)})
	}
	table(b, []string{"prefix", "from"}, rows)
	return b.String()
}
