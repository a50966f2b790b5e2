package rulecases

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/health"
)

// Result is what the rules gave one case.
type Result struct {
	Case *Case `json:"-"`
	// File and Name name the case.
	File string `json:"file"`
	Name string `json:"name"`
	// Resource is the plural resource name the rules were looked up with.
	Resource string `json:"resource"`
	// State and Message are the verdict of the rules on the object, as
	// the health loop gives it on a first assessment.
	State   convoyv1alpha1.HealthState `json:"state"`
	Message string                     `json:"message,omitempty"`
	// Rule names the rule that decided; empty when every rule passed.
	Rule string `json:"rule,omitempty"`
	// Failures say how the verdict differs from the case's, and what is
	// wrong with a rule on the object; empty when the case passes.
	Failures []string `json:"failures,omitempty"`
}

// Passed reports whether the rules gave what the case expects.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

// RuleCoverage tells how a rule (of one apiVersion) did, on its own, on
// the cases it applies to: a rule is exercised when at least one case
// passes it and one fails it.
type RuleCoverage struct {
	// Rule names the rule (set name and index, or its name).
	Rule       string   `json:"rule"`
	APIVersion string   `json:"apiVersion"`
	Resources  []string `json:"resources"`
	Passed     int      `json:"passed"`
	Failed     int      `json:"failed"`
}

// Exercised reports whether a case passes the rule and another fails it.
func (c *RuleCoverage) Exercised() bool { return c.Passed > 0 && c.Failed > 0 }

// Report is the outcome of a run.
type Report struct {
	// Results are the cases' results, in the cases' order.
	Results []Result `json:"results"`
	// Coverage has an entry for every rule, in the rules' order.
	Coverage []RuleCoverage `json:"coverage"`
}

// Failed returns the results of the cases that did not pass.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if !res.Passed() {
			out = append(out, res)
		}
	}
	return out
}

// Unexercised returns the coverage of the rules that no case passes or no
// case fails.
func (r *Report) Unexercised() []RuleCoverage {
	var out []RuleCoverage
	for _, c := range r.Coverage {
		if !c.Exercised() {
			out = append(out, c)
		}
	}
	return out
}

// PluralFunc gives the plural resource name of a kind, which the rules
// match (spec.rules[].resources).
type PluralFunc func(schema.GroupVersionKind) string

// GuessPlural guesses the plural from the kind as kubectl does for a kind
// it does not know (Ingress: ingresses, NetworkPolicy: networkpolicies).
func GuessPlural(gvk schema.GroupVersionKind) string {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// Run evaluates rules on every case's object and compares the verdict with
// the case's state and message. plural gives the resource name of each
// object (GuessPlural when nil). Besides the verdict of all the rules that
// apply, it evaluates each of them on its own: that counts the rule's
// coverage, and a rule that cannot be evaluated on an object (unless the
// case expects Unknown) or whose messageExpression gives no message is a
// failure of the case, even when another rule decided the verdict.
func Run(ctx context.Context, rules *health.Rules, plural PluralFunc, cases []*Case) *Report {
	if plural == nil {
		plural = GuessPlural
	}
	report := &Report{}
	index := map[*health.CompiledRule]int{}
	for i, r := range rules.All() {
		index[r] = i
		report.Coverage = append(report.Coverage, RuleCoverage{Rule: r.String(), APIVersion: r.Rule.APIVersion, Resources: r.Rule.Resources})
	}
	for _, c := range cases {
		report.Results = append(report.Results, runCase(ctx, rules, plural, c, func(r *health.CompiledRule, passed bool) {
			if i, ok := index[r]; ok {
				if passed {
					report.Coverage[i].Passed++
				} else {
					report.Coverage[i].Failed++
				}
			}
		}))
	}
	return report
}

// runCase evaluates the rules on c's object; count records how each rule
// that applies did on its own.
func runCase(ctx context.Context, rules *health.Rules, plural PluralFunc, c *Case, count func(*health.CompiledRule, bool)) Result {
	obj := c.object
	gvk := obj.GroupVersionKind()
	resource := plural(gvk)
	res := Result{Case: c, File: c.File, Name: c.Name, Resource: resource}
	applying := rules.For(gvk.GroupVersion().String(), resource)
	if len(applying) == 0 {
		res.State = convoyv1alpha1.HealthHealthy
		res.Message = health.MessageNoRule
		res.Failures = append(res.Failures, fmt.Sprintf("no rule applies to %s %s (apiVersion %s, resource %s): the case tests nothing",
			gvk.Kind, obj.GetName(), gvk.GroupVersion(), resource))
		return res
	}
	v := health.Evaluate(ctx, applying, obj.Object)
	res.State, res.Message = v.State(), v.Message
	if v.Rule != nil {
		res.Rule = v.Rule.String()
	}
	if res.State != c.State {
		res.Failures = append(res.Failures, fmt.Sprintf("state %s, want %s", res.State, c.State))
	}
	switch {
	case c.pattern != nil && !c.pattern.MatchString(res.Message):
		res.Failures = append(res.Failures, fmt.Sprintf("message %q does not match %q", res.Message, c.MessagePattern))
	case c.pattern == nil && c.Message != "" && res.Message != c.Message:
		res.Failures = append(res.Failures, fmt.Sprintf("message %q, want %q", res.Message, c.Message))
	}
	for _, r := range applying {
		one := health.Evaluate(ctx, []*health.CompiledRule{r}, obj.Object)
		switch one.Result {
		case health.ResultPass:
			count(r, true)
		case health.ResultError:
			if c.State != convoyv1alpha1.HealthUnknown {
				res.Failures = append(res.Failures, one.Message)
			}
		default:
			count(r, false)
			if err := r.CheckMessage(ctx, obj.Object); err != nil {
				res.Failures = append(res.Failures, err.Error())
			}
		}
	}
	return res
}
