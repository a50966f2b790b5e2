package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Expression is one PromQL expression and where it is written.
type Expression struct {
	Where string
	Expr  string
}

// promParser is Prometheus's default parser.
var promParser = parser.NewParser(parser.Options{})

// Expressions reads the expressions of the PrometheusRule at rulesPath
// (validated as Prometheus validates a rule file: every expression parses,
// every alert has its labels and annotations as templates that parse) and of
// the Grafana dashboard at dashboardPath (its panels' targets and its
// variables' label_values queries).
func Expressions(rulesPath, dashboardPath string) ([]Expression, error) {
	fromRules, err := ruleExpressions(rulesPath)
	if err != nil {
		return nil, err
	}
	fromDashboard, err := dashboardExpressions(dashboardPath)
	if err != nil {
		return nil, err
	}
	return append(fromRules, fromDashboard...), nil
}

// prometheusRule is the part of a PrometheusRule read here.
type prometheusRule struct {
	APIVersion string    `yaml:"apiVersion"`
	Kind       string    `yaml:"kind"`
	Spec       yaml.Node `yaml:"spec"`
}

func ruleExpressions(path string) ([]Expression, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pr prometheusRule
	if err := yaml.Unmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s: %s %s is not a monitoring.coreos.com/v1 PrometheusRule", path, pr.APIVersion, pr.Kind)
	}
	spec, err := yaml.Marshal(&pr.Spec)
	if err != nil {
		return nil, err
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errors.Join(errs...))
	}
	var out []Expression
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			if r.Alert != "" {
				for _, key := range []string{"summary", "description", "runbook_url"} {
					if r.Annotations[key] == "" {
						return nil, fmt.Errorf("%s: alert %s has no %s annotation", path, r.Alert, key)
					}
				}
				if r.Labels["severity"] == "" {
					return nil, fmt.Errorf("%s: alert %s has no severity label", path, r.Alert)
				}
			}
			out = append(out, Expression{Where: fmt.Sprintf("%s: group %s, %s", path, g.Name, name), Expr: r.Expr})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rules", path)
	}
	return out, nil
}

// panel is the part of a Grafana panel read here; a row holds panels.
type panel struct {
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Panels  []panel  `json:"panels"`
	Targets []target `json:"targets"`
}

type target struct {
	Expr  string `json:"expr"`
	RefID string `json:"refId"`
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValues is a Grafana variable query label_values(SELECTOR, LABEL).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

func dashboardExpressions(path string) ([]Expression, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.Title == "" || d.UID == "" {
		return nil, fmt.Errorf("%s: a dashboard has a title and a uid", path)
	}
	var out []Expression
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, t := range p.Targets {
				out = append(out, Expression{Where: fmt.Sprintf("%s: panel %q target %s", path, p.Title, t.RefID), Expr: t.Expr})
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		match := labelValues.FindStringSubmatch(strings.TrimSpace(q))
		if match == nil {
			return nil, fmt.Errorf("%s: variable %s: query %q is not label_values(SELECTOR, LABEL)", path, v.Name, q)
		}
		out = append(out, Expression{Where: fmt.Sprintf("%s: variable %s", path, v.Name), Expr: match[1]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return out, nil
}

// grafanaVariable is a Grafana variable in an expression: $__rate_interval,
// $namespace, ${namespace}.
var grafanaVariable = regexp.MustCompile(`\$\{?(__)?[a-zA-Z_][a-zA-Z0-9_]*\}?`)

// withoutVariables replaces Grafana's variables by values PromQL takes: a
// duration for the interval variables, a word for the others (they stand in
// label values).
func withoutVariables(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.Contains(v, "__") {
			return "5m"
		}
		return "x"
	})
}

// MetricNames parses every expression and returns the metric names they
// select, sorted and unique. A name is as written (a histogram's _bucket,
// _sum or _count included).
func MetricNames(exprs []Expression) ([]string, error) {
	seen := map[string]bool{}
	var errs []error
	for _, e := range exprs {
		if strings.TrimSpace(e.Expr) == "" {
			errs = append(errs, fmt.Errorf("%s: no expression", e.Where))
			continue
		}
		node, err := promParser.ParseExpr(withoutVariables(e.Expr))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Where, err))
			continue
		}
		found := 0
		parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
				seen[vs.Name] = true
				found++
			}
			return nil
		})
		if found == 0 {
			errs = append(errs, fmt.Errorf("%s: selects no metric by name", e.Where))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// NamesFile is the content of the metric names file.
func NamesFile(names []string) string {
	return "# The metric names artifacts/monitoring's PrometheusRule and dashboard use,\n" +
		"# written by hack/tools/promql (hack/update-codegen.sh); the e2e tests check\n" +
		"# that a running convoy-apiserver exports each and that docs/reference/metrics.md lists it.\n" +
		strings.Join(names, "\n") + "\n"
}
