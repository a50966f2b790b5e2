package health

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
