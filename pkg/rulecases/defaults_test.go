package rulecases

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	defaultrules "github.com/kumodo/convoy-apiserver/artifacts/rules"
	"github.com/kumodo/convoy-apiserver/pkg/health"
)

// defaultCasesDir holds, for each default rule set artifacts/rules/NAME.yaml,
// its cases in NAME.yaml.
const defaultCasesDir = "../../artifacts/rules/cases"

// defaultRules compiles the default rule sets as a Release selecting them
// gets them.
func defaultRules(t testing.TB) *health.Rules {
	t.Helper()
	globals, err := defaultrules.Default()
	require.NoError(t, err)
	sets, err := health.Select(&convoyv1alpha1.HealthAssessment{
		GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"convoy.kumodo.io/default": "true"}},
	}, globals, nil)
	require.NoError(t, err)
	require.Len(t, sets, len(globals), "every default set is labeled default")
	rules, err := health.NewCompiler(0).Compile(sets)
	require.NoError(t, err)
	return rules
}

// TestDefaultRuleCases runs the cases of artifacts/rules/cases with the
// case runner `kubectl convoy rules test --cases` uses, and checks that
// every default rule passes on a case and fails on another for each
// apiVersion it holds for (hack/gen-rules writes a rule of several
// apiVersions once per apiVersion), and that each apiVersion and resource
// has a Healthy case and one that is not.
func TestDefaultRuleCases(t *testing.T) {
	globals, err := defaultrules.Default()
	require.NoError(t, err)
	for _, set := range globals {
		file := filepath.Join(defaultCasesDir, strings.TrimPrefix(set.Name, "convoy-default-")+".yaml")
		_, err := os.Stat(file)
		assert.NoError(t, err, "the default rule set %s has its cases in %s", set.Name, file)
	}

	cases, err := Load([]string{defaultCasesDir}, false)
	require.NoError(t, err)
	for _, c := range cases {
		assert.NotEmpty(t, strings.TrimSpace(c.Source), "%s says not where its object comes from", c.ID())
		assert.NotEqual(t, convoyv1alpha1.HealthUnknown, c.State, "%s: the default rules guard every field they read", c.ID())
	}

	report := Run(context.Background(), defaultRules(t), nil, cases)
	for _, r := range report.Results {
		t.Run(filepath.Base(r.File)+"/"+r.Name, func(t *testing.T) {
			assert.Empty(t, r.Failures)
		})
	}
	for _, c := range report.Coverage {
		assert.Positive(t, c.Passed, "%s (%s %v) never passes: add a case", c.Rule, c.APIVersion, c.Resources)
		assert.Positive(t, c.Failed, "%s (%s %v) never fails: add a case", c.Rule, c.APIVersion, c.Resources)
	}

	type target struct{ apiVersion, resource string }
	healthy, unhealthy := map[target]bool{}, map[target]bool{}
	for _, r := range report.Results {
		key := target{r.Case.object.GetAPIVersion(), r.Resource}
		if r.Case.State == convoyv1alpha1.HealthHealthy {
			healthy[key] = true
		} else {
			unhealthy[key] = true
		}
	}
	for _, c := range report.Coverage {
		for _, res := range c.Resources {
			key := target{c.APIVersion, res}
			assert.True(t, healthy[key], "no Healthy case of %s %s", res, c.APIVersion)
			assert.True(t, unhealthy[key], "no case of %s %s that is not Healthy", res, c.APIVersion)
		}
	}
}
