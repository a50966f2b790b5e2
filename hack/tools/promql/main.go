// Command promql checks the monitoring artifacts of convoy-apiserver with
// Prometheus's own PromQL parser: every expression of the PrometheusRule and
// of the Grafana dashboard parses, and the metric names they use are written
// (sorted, one per line) to a file that hack/verify-codegen.sh keeps current
// and the e2e tests compare with what a running server exports.
//
// It is a module of its own so that Prometheus's dependencies cannot move
// the project's k8s.io versions.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	rules := flag.String("rules", "artifacts/monitoring/prometheusrule.yaml", "the PrometheusRule")
	dashboard := flag.String("dashboard", "artifacts/monitoring/dashboard.json", "the Grafana dashboard")
	out := flag.String("names", "artifacts/monitoring/metric-names.txt", "where the metric names are written; empty: not written")
	flag.Parse()
	exprs, err := Expressions(*rules, *dashboard)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names, err := MetricNames(exprs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *out == "" {
		return
	}
	if err := os.WriteFile(*out, []byte(NamesFile(names)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
