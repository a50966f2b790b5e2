package rulecases

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/health"
)

// colorRules are three rules on ConfigMaps: data.color is green
// (messageExpression), spec-less data.size is read without a guard (cannot
// be evaluated when absent), and data.paused is Suspended.
func colorRules(t testing.TB) *health.Rules {
	t.Helper()
	rules, err := health.NewCompiler(0).Compile([]health.RuleSet{{
		Kind: health.KindHealthRuleSet, Namespace: "shop", Name: "colors",
		Rules: []convoyv1alpha1.HealthRule{
			{APIVersion: "v1", Resources: []string{"configmaps"}, Expression: "object.?data.?paused.orValue('') != 'true'",
				Message: "paused", WhenFalse: convoyv1alpha1.FailSuspended},
			{APIVersion: "v1", Resources: []string{"configmaps"}, Expression: "object.?data.?color.orValue('') == 'green'",
				MessageExpression: "object.?data.?color.orValue('') == 'none' ? '' : 'color is ' + object.?data.?color.orValue('unset')", Message: "not green"},
			{APIVersion: "v1", Resources: []string{"configmaps"}, Expression: "object.data.size != 'large'", Message: "too large"},
		},
	}})
	require.NoError(t, err)
	return rules
}

func configMapCase(t testing.TB, name string, state convoyv1alpha1.HealthState, message, pattern string, data map[string]any) *Case {
	t.Helper()
	c := &Case{Name: name, State: state, Message: message, MessagePattern: pattern, File: "cases.yaml",
		Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": data}}
	require.NoError(t, c.complete(t.TempDir()))
	return c
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		c        *Case
		state    convoyv1alpha1.HealthState
		rule     string
		failures []string
	}{
		{name: "healthy as expected", c: configMapCase(t, "green", convoyv1alpha1.HealthHealthy, "", "", map[string]any{"color": "green", "size": "small"}),
			state: convoyv1alpha1.HealthHealthy},
		{name: "a message as expected", c: configMapCase(t, "blue", convoyv1alpha1.HealthProgressing, "color is blue", "", map[string]any{"color": "blue", "size": "small"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors"},
		{name: "a pattern that matches", c: configMapCase(t, "blue pattern", convoyv1alpha1.HealthProgressing, "", `is \w+$`, map[string]any{"color": "blue", "size": "small"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors"},
		{name: "another state", c: configMapCase(t, "blue said green", convoyv1alpha1.HealthHealthy, "", "", map[string]any{"color": "blue", "size": "small"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors", failures: []string{"state Progressing, want Healthy"}},
		{name: "another message", c: configMapCase(t, "red", convoyv1alpha1.HealthProgressing, "color is blue", "", map[string]any{"color": "red", "size": "small"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors", failures: []string{`message "color is red", want "color is blue"`}},
		{name: "a pattern that does not match", c: configMapCase(t, "red pattern", convoyv1alpha1.HealthProgressing, "", "^blue", map[string]any{"color": "red", "size": "small"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors", failures: []string{`message "color is red" does not match "^blue"`}},
		{name: "suspended", c: configMapCase(t, "paused", convoyv1alpha1.HealthSuspended, "paused", "", map[string]any{"paused": "true", "color": "green", "size": "small"}),
			state: convoyv1alpha1.HealthSuspended, rule: "rule 0 of HealthRuleSet shop/colors"},
		{name: "a rule that cannot be evaluated fails the case though another rule decided",
			c:     configMapCase(t, "no size", convoyv1alpha1.HealthProgressing, "color is blue", "", map[string]any{"color": "blue"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors",
			failures: []string{"rule 2 of HealthRuleSet shop/colors cannot be evaluated: no such key: size"}},
		{name: "unless the case expects Unknown", c: configMapCase(t, "green no size", convoyv1alpha1.HealthUnknown, "", "cannot be evaluated", map[string]any{"color": "green"}),
			state: convoyv1alpha1.HealthUnknown, rule: "rule 2 of HealthRuleSet shop/colors"},
		{name: "an empty messageExpression fails the case", c: configMapCase(t, "none", convoyv1alpha1.HealthProgressing, "not green", "", map[string]any{"color": "none", "size": "small"}),
			state: convoyv1alpha1.HealthProgressing, rule: "rule 1 of HealthRuleSet shop/colors",
			failures: []string{"rule 1 of HealthRuleSet shop/colors: messageExpression returned an empty string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := Run(ctx, colorRules(t), nil, []*Case{tc.c})
			require.Len(t, report.Results, 1)
			r := report.Results[0]
			assert.Equal(t, tc.state, r.State, r.Message)
			assert.Equal(t, tc.rule, r.Rule)
			assert.Equal(t, "configmaps", r.Resource)
			assert.Equal(t, tc.failures, r.Failures)
			assert.Equal(t, len(tc.failures) == 0, r.Passed())
		})
	}
}

func TestRunNoRuleApplies(t *testing.T) {
	c := &Case{Name: "secret", State: convoyv1alpha1.HealthHealthy, File: "cases.yaml",
		Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}}}
	require.NoError(t, c.complete(t.TempDir()))
	report := Run(context.Background(), colorRules(t), nil, []*Case{c})
	assert.Equal(t, []string{"no rule applies to Secret s (apiVersion v1, resource secrets): the case tests nothing"}, report.Results[0].Failures)

	// A plural function that knows better is used.
	report = Run(context.Background(), colorRules(t), func(schema.GroupVersionKind) string { return "configmaps" }, []*Case{c})
	assert.Equal(t, "configmaps", report.Results[0].Resource)
	assert.Equal(t, []string{"state Progressing, want Healthy", "rule 2 of HealthRuleSet shop/colors cannot be evaluated: no such key: data"},
		report.Results[0].Failures)
}

func TestRunCoverage(t *testing.T) {
	green := configMapCase(t, "green", convoyv1alpha1.HealthHealthy, "", "", map[string]any{"color": "green", "size": "small"})
	blue := configMapCase(t, "blue", convoyv1alpha1.HealthProgressing, "color is blue", "", map[string]any{"color": "blue", "size": "small"})

	report := Run(context.Background(), colorRules(t), nil, []*Case{green})
	require.Len(t, report.Coverage, 3)
	for _, c := range report.Coverage {
		assert.Equal(t, 1, c.Passed, c.Rule)
		assert.Zero(t, c.Failed, c.Rule)
	}
	assert.Len(t, report.Unexercised(), 3)
	assert.Empty(t, report.Failed())

	report = Run(context.Background(), colorRules(t), nil, []*Case{green, blue, blue})
	assert.Equal(t, RuleCoverage{Rule: "rule 1 of HealthRuleSet shop/colors", APIVersion: "v1", Resources: []string{"configmaps"}, Passed: 1, Failed: 2}, report.Coverage[1])
	assert.True(t, report.Coverage[1].Exercised())
	assert.Len(t, report.Unexercised(), 2, "rules 0 and 2 never fail")
}

// TestLoadAndRun: a file's cases, loaded and run, as rules test --cases does.
func TestLoadAndRun(t *testing.T) {
	dir := writeCases(t, map[string]string{
		"cases.yaml": "cases:\n- name: blue\n  state: Progressing\n  message: color is blue\n  objectFile: blue.yaml\n",
		"blue.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {color: blue, size: small}\n",
	})
	cases, err := Load([]string{filepath.Join(dir, "cases.yaml")}, false)
	require.NoError(t, err)
	report := Run(context.Background(), colorRules(t), nil, cases)
	assert.Empty(t, report.Failed())
}
