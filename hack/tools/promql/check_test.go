package main

import (
	"os"
	"path/filepath"
	"testing"
)

const (
	rulesFile     = "../../../artifacts/monitoring/prometheusrule.yaml"
	dashboardFile = "../../../artifacts/monitoring/dashboard.json"
	namesFile     = "../../../artifacts/monitoring/metric-names.txt"
)

// TestArtifacts: every expression of the shipped PrometheusRule and
// dashboard parses, and metric-names.txt lists exactly the metrics they use.
func TestArtifacts(t *testing.T) {
	exprs, err := Expressions(rulesFile, dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	names, err := MetricNames(exprs)
	if err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(namesFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := NamesFile(names); string(written) != got {
		t.Errorf("%s is out of date: run hack/update-codegen.sh; want\n%s", namesFile, got)
	}
}

func TestRejects(t *testing.T) {
	const goodAlert = `    - alert: A
      expr: up == 0
      labels: {severity: warning}
      annotations: {summary: s, description: d, runbook_url: u}
`
	const rulesHead = "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: r}\nspec:\n  groups:\n  - name: g\n    rules:\n"
	const goodDashboard = `{"title": "d", "uid": "d", "panels": [{"title": "p", "targets": [{"expr": "rate(x_total[$__rate_interval])", "refId": "A"}]}]}`
	for _, tc := range []struct {
		name, rules, dashboard string
	}{
		{"an expression that does not parse", rulesHead + "    - alert: A\n      expr: sum(up\n      labels: {severity: warning}\n      annotations: {summary: s, description: d, runbook_url: u}\n", goodDashboard},
		{"an alert without a runbook", rulesHead + "    - alert: A\n      expr: up == 0\n      labels: {severity: warning}\n      annotations: {summary: s, description: d}\n", goodDashboard},
		{"an alert without a severity", rulesHead + "    - alert: A\n      expr: up == 0\n      annotations: {summary: s, description: d, runbook_url: u}\n", goodDashboard},
		{"a template that does not parse", rulesHead + "    - alert: A\n      expr: up == 0\n      labels: {severity: warning}\n      annotations: {summary: '{{ $labels.x ', description: d, runbook_url: u}\n", goodDashboard},
		{"not a PrometheusRule", "apiVersion: v1\nkind: ConfigMap\n", goodDashboard},
		{"a panel that does not parse", rulesHead + goodAlert, `{"title": "d", "uid": "d", "panels": [{"title": "p", "targets": [{"expr": "rate(x_total[)", "refId": "A"}]}]}`},
		{"a panel in a row that does not parse", rulesHead + goodAlert, `{"title": "d", "uid": "d", "panels": [{"type": "row", "panels": [{"title": "p", "targets": [{"expr": "sum(", "refId": "A"}]}]}]}`},
		{"an empty target", rulesHead + goodAlert, `{"title": "d", "uid": "d", "panels": [{"title": "p", "targets": [{"expr": "", "refId": "A"}]}]}`},
		{"a variable query that is not label_values", rulesHead + goodAlert, `{"title": "d", "uid": "d", "panels": [], "templating": {"list": [{"name": "ns", "type": "query", "query": "query_result(up)"}]}}`},
		{"a dashboard without a uid", rulesHead + goodAlert, `{"title": "d", "panels": []}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, d := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "dashboard.json")
			if err := os.WriteFile(r, []byte(tc.rules), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(d, []byte(tc.dashboard), 0o600); err != nil {
				t.Fatal(err)
			}
			exprs, err := Expressions(r, d)
			if err == nil {
				_, err = MetricNames(exprs)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
		})
	}

	// The good ones pass, variables and all.
	dir := t.TempDir()
	r, d := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "dashboard.json")
	_ = os.WriteFile(r, []byte(rulesHead+goodAlert), 0o600)
	_ = os.WriteFile(d, []byte(`{"title": "d", "uid": "d", "panels": [{"title": "p", "targets": [{"expr": "rate(x_total{ns=~\"$ns\"}[$__rate_interval])", "refId": "A"}]}],
		"templating": {"list": [{"name": "ns", "type": "query", "query": {"query": "label_values(y_info, ns)"}}]}}`), 0o600)
	exprs, err := Expressions(r, d)
	if err != nil {
		t.Fatal(err)
	}
	names, err := MetricNames(exprs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"up", "x_total", "y_info"}; len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("names %v, want %v", names, want)
	}
}
