package health

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// TestDefaultRuleSetFiles checks the files of artifacts/rules: one
// GlobalHealthRuleSet each, labeled default, every rule with a message and
// within the bounds of the CRD.
func TestDefaultRuleSetFiles(t *testing.T) {
	files, sets := loadDefaults(t)
	names := map[string]bool{}
	for i, set := range sets {
		assert.Equal(t, "convoy.kumodo.io/v1alpha1", set.APIVersion, files[i])
		assert.Equal(t, "GlobalHealthRuleSet", set.Kind, files[i])
		assert.Equal(t, "true", set.Labels["convoy.kumodo.io/default"], files[i])
		assert.False(t, names[set.Name], "%s: name %s used twice", files[i], set.Name)
		names[set.Name] = true
		require.NotEmpty(t, set.Spec.Rules, files[i])
		assert.LessOrEqual(t, len(set.Spec.Rules), 256, files[i])
		for j, rule := range set.Spec.Rules {
			where := fmt.Sprintf("%s rule %d", files[i], j)
			assert.NotEmpty(t, rule.APIVersion, where)
			assert.NotEmpty(t, rule.Resources, where)
			assert.True(t, rule.Message != "" || rule.MessageExpression != "", "%s has no message", where)
			assert.LessOrEqual(t, len(rule.Expression), 4096, where)
			assert.LessOrEqual(t, len(rule.MessageExpression), 4096, where)
			assert.LessOrEqual(t, len(rule.Message), 1024, where)
		}
	}
}

// TestDefaultRules evaluates the default rules on the cases of
// testdata/rules (objects of every kind they cover, as their controllers
// write them), and checks that each rule passes on at least one object and
// fails on another.
func TestDefaultRules(t *testing.T) {
	rules, err := NewCompiler(0).Compile(defaultSelection(t))
	require.NoError(t, err)

	type outcome struct{ passed, failed bool }
	seen := map[*CompiledRule]*outcome{}
	for _, r := range rules.All() {
		seen[r] = &outcome{}
	}
	ctx := context.Background()

	// check evaluates the default rules on obj, and each rule on its own.
	check := func(t *testing.T, obj map[string]any, want Result, message string) {
		applying := rulesFor(rules, obj)
		require.NotEmpty(t, applying, "no default rule applies to %s", gvkOf(obj))

		v := Evaluate(ctx, applying, obj)
		assert.Equal(t, want, v.Result, v.Message)
		if want != ResultPass {
			assert.Equal(t, message, v.Message)
		} else {
			assert.Empty(t, v.Message)
		}

		// Each rule on its own: it returns a bool, and a failing
		// rule's messageExpression returns a non-empty string.
		for _, r := range applying {
			one := Evaluate(ctx, []*CompiledRule{r}, obj)
			require.NotEqual(t, ResultError, one.Result, one.Message)
			if one.Result == ResultPass {
				seen[r].passed = true
				continue
			}
			seen[r].failed = true
			if r.messageProgram != nil {
				out, _, err := r.messageProgram.ContextEval(ctx, &activation{object: withoutNulls(obj)})
				require.NoError(t, err, "%s: messageExpression", r)
				require.IsType(t, types.String(""), out, "%s: messageExpression", r)
				assert.NotEmpty(t, string(out.(types.String)), "%s: messageExpression", r)
			}
		}
	}

	for file, cases := range loadCases(t) {
		for _, tc := range cases {
			t.Run(file+"/"+tc.Name, func(t *testing.T) {
				check(t, tc.Object, resultOf(tc.State), tc.Message)
			})
		}
	}

	for r, o := range seen {
		assert.True(t, o.passed, "%s (%s %v) never passes: add a case", r, r.Rule.APIVersion, r.Rule.Resources)
		assert.True(t, o.failed, "%s (%s %v) never fails: add a case", r, r.Rule.APIVersion, r.Rule.Resources)
	}
}

// TestDefaultRulesDoNotApplyElsewhere: a ConfigMap has no default rule, so
// it is Healthy without being read.
func TestDefaultRulesDoNotApplyElsewhere(t *testing.T) {
	rules, err := NewCompiler(0).Compile(defaultSelection(t))
	require.NoError(t, err)
	assert.Empty(t, rules.For("v1", "configmaps"))
	assert.Empty(t, rules.For("apps/v1beta1", "deployments"))
	assert.Empty(t, rules.ForAPIVersion("v1beta1"), "no object of that apiVersion is looked up")
	assert.NotEmpty(t, rules.For("apps/v1", "deployments"))
}

// TestDefaultRuleCasesCoverEveryVersion: in every default rule set, every
// apiVersion and resource a rule is for has a Healthy case and a case that
// is not.
func TestDefaultRuleCasesCoverEveryVersion(t *testing.T) {
	_, sets := loadDefaults(t)
	files, _ := loadDefaults(t)
	cases := loadCases(t)
	for i, set := range sets {
		fileCases := cases[files[i]]
		type target struct{ apiVersion, resource string }
		healthy, unhealthy := map[target]bool{}, map[target]bool{}
		for _, c := range fileCases {
			gvk := gvkOf(c.Object)
			key := target{gvk.GroupVersion().String(), pluralOf(gvk)}
			if c.State == convoyv1alpha1.HealthHealthy {
				healthy[key] = true
			} else {
				unhealthy[key] = true
			}
		}
		for _, rule := range set.Spec.Rules {
			for _, res := range rule.Resources {
				key := target{rule.APIVersion, res}
				assert.True(t, healthy[key], "%s: no Healthy case of %s %s", files[i], res, rule.APIVersion)
				assert.True(t, unhealthy[key], "%s: no case of %s %s that is not Healthy", files[i], res, rule.APIVersion)
			}
		}
	}
}
