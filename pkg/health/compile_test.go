package health

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// rule is a rule for apps/v1 deployments.
func rule(expression string) convoyv1alpha1.HealthRule {
	return convoyv1alpha1.HealthRule{APIVersion: "apps/v1", Resources: []string{"deployments"}, Expression: expression}
}

// set is a HealthRuleSet shop/NAME at generation gen.
func set(name string, gen int64, rules ...convoyv1alpha1.HealthRule) RuleSet {
	return RuleSet{Kind: KindHealthRuleSet, Namespace: "shop", Name: name, UID: types.UID("uid-" + name), Generation: gen, Rules: rules}
}

func ruleInvalid(t *testing.T, err error) *failure.Error {
	t.Helper()
	require.Error(t, err)
	var herr *failure.Error
	require.True(t, errors.As(err, &herr), "%T is not a *failure.Error", err)
	assert.Equal(t, ReasonRuleInvalid, herr.Reason)
	assert.Equal(t, herr.Message, err.Error())
	return herr
}

func TestCompileInvalidRules(t *testing.T) {
	withMessage := func(r convoyv1alpha1.HealthRule, messageExpression string) convoyv1alpha1.HealthRule {
		r.MessageExpression = messageExpression
		return r
	}
	tests := []struct {
		name     string
		rules    []convoyv1alpha1.HealthRule
		messages []string
	}{
		{name: "syntax error", rules: []convoyv1alpha1.HealthRule{rule("true"), rule("object.status.(")},
			messages: []string{"rule 1 of HealthRuleSet shop/bad: expression does not compile: ERROR: <input>:1:"}},
		{name: "undeclared reference", rules: []convoyv1alpha1.HealthRule{rule("self.status.ready")},
			messages: []string{"rule 0 of HealthRuleSet shop/bad: expression does not compile", "undeclared reference to 'self'"}},
		{name: "unknown function", rules: []convoyv1alpha1.HealthRule{rule("object.spec.replicas.frobnicate()")},
			messages: []string{"rule 0 of HealthRuleSet shop/bad: expression does not compile", "frobnicate"}},
		{name: "messageExpression typed int", rules: []convoyv1alpha1.HealthRule{withMessage(rule("true"), "size(object.spec)")},
			messages: []string{"rule 0 of HealthRuleSet shop/bad: messageExpression must return a string, not int"}},
		{name: "messageExpression does not compile", rules: []convoyv1alpha1.HealthRule{withMessage(rule("true"), "'a' +")},
			messages: []string{"rule 0 of HealthRuleSet shop/bad: messageExpression does not compile"}},
		{name: "no apiVersion", rules: []convoyv1alpha1.HealthRule{{Resources: []string{"*"}, Expression: "true"}},
			messages: []string{"rule 0 of HealthRuleSet shop/bad: apiVersion and resources must be set"}},
		{name: "every bad rule is named", rules: []convoyv1alpha1.HealthRule{rule("object.("), rule("true"), rule("x")},
			messages: []string{"rule 0 of HealthRuleSet shop/bad: expression does not compile",
				"; rule 2 of HealthRuleSet shop/bad: expression does not compile"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			good := set("good", 1, rule("true"))
			rules, err := NewCompiler(0).Compile([]RuleSet{good, set("bad", 1, tc.rules...)})
			assert.Nil(t, rules)
			herr := ruleInvalid(t, err)
			for _, m := range tc.messages {
				assert.Contains(t, herr.Message, m)
			}
			assert.NotNil(t, errors.Unwrap(err), "the CEL error is wrapped")
		})
	}
}

// A rule that does not return a bool compiles, whatever its type; its
// evaluation is an error, which makes the resource Unknown (the Health
// page), not the Release Cannot assess.
func TestRulesOfOtherTypesCompileAndFailToEvaluate(t *testing.T) {
	for expression, typ := range map[string]string{
		"size(object.spec) + 1": "int",
		"'healthy'":             "string",
		"object.?spec.?paused":  "optional_type",
	} {
		rules, err := NewCompiler(0).Compile([]RuleSet{set("typed", 1, rule(expression))})
		require.NoError(t, err, expression)
		v := Evaluate(t.Context(), rules.All(), map[string]any{"spec": map[string]any{"paused": true}})
		assert.Equal(t, ResultError, v.Result, expression)
		assert.Contains(t, v.Message, "rule 0 of HealthRuleSet shop/typed returned "+typ, expression)
		assert.Contains(t, v.Message, "not a bool", expression)
	}
}

func TestCompileKubernetesLibraries(t *testing.T) {
	// Each library of the Kubernetes base environment is there.
	for _, expression := range []string{
		`object.metadata.name.matches('^web-[0-9]+$')`,                                  // regex
		`[1, 2, 3].isSorted() && [1, 2].sum() == 3`,                                     // lists
		`url('https://example.com/x').getHost() == 'example.com'`,                       // URLs
		`quantity('1Gi').isGreaterThan(quantity('512Mi'))`,                              // quantity
		`format.dns1123Label().validate('web') == optional.none()`,                      // format
		`ip('10.0.0.1').family() == 4 && cidr('10.0.0.0/8').containsIP(ip('10.0.0.1'))`, // IP and CIDR
		`semver('1.2.3').isLessThan(semver('1.10.0'))`,                                  // semver
		`'a,b'.split(',').size() == 2 && 'Web'.lowerAscii() == 'web'`,                   // strings
		`sets.contains([1, 2, 3], [1])`,                                                 // sets
		`{'a': 1}.all(k, v, v > 0)`,                                                     // two-variable comprehensions
		`object.?spec.?replicas.orValue(1) >= 1`,                                        // optional types
	} {
		rules, err := NewCompiler(0).Compile([]RuleSet{set("libs", 1, rule(expression))})
		require.NoError(t, err, expression)
		v := Evaluate(t.Context(), rules.All(), map[string]any{"metadata": map[string]any{"name": "web-1"}, "spec": map[string]any{}})
		assert.Equal(t, ResultPass, v.Result, "%s: %s", expression, v.Message)
	}
}

func TestCompileRejectsARuleAlwaysOverTheCostLimit(t *testing.T) {
	hundred := "[" + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + "]"
	// 10,000 additions and lists of 100 built on every evaluation, whatever
	// the object.
	expensive := "size(" + hundred + ".map(a, " + hundred + ".map(b, a + b))) > 0"

	_, err := NewCompiler(100_000).Compile([]RuleSet{set("expensive", 1, rule(expensive))})
	herr := ruleInvalid(t, err)
	assert.Contains(t, herr.Message, "rule 0 of HealthRuleSet shop/expensive: expression costs at least")
	assert.Contains(t, herr.Message, "more than the cost limit of 100000")

	// With the default limit it compiles; a rule over the object's lists
	// compiles whatever its worst case: the limit stops it at run time.
	rules, err := NewCompiler(0).Compile([]RuleSet{set("expensive", 1, rule(expensive),
		rule("object.spec.items.all(a, object.spec.items.all(b, a == b))"))})
	require.NoError(t, err)
	all := rules.All()
	assert.Greater(t, all[0].MinCost, uint64(100_000))
	assert.LessOrEqual(t, all[0].MinCost, all[0].MaxCost)
	assert.Less(t, all[1].MinCost, uint64(10))
	assert.Greater(t, all[1].MaxCost, DefaultCostLimit)
}

func TestCompilerReusesPrograms(t *testing.T) {
	c := NewCompiler(0)
	a1 := set("a", 1, rule("true"), rule("has(object.status)"))
	b1 := set("b", 4, rule("true"))

	first, err := c.Compile([]RuleSet{a1, b1})
	require.NoError(t, err)
	assert.EqualValues(t, 2, c.compilations.Load())

	// Same generations: nothing compiled, the very same programs.
	second, err := c.Compile([]RuleSet{a1, b1})
	require.NoError(t, err)
	assert.EqualValues(t, 2, c.compilations.Load())
	require.Equal(t, first.Len(), second.Len())
	for i := range first.All() {
		assert.Same(t, first.All()[i], second.All()[i])
	}

	// A subset, another Release's selection: still nothing compiled.
	_, err = c.Compile([]RuleSet{b1})
	require.NoError(t, err)
	assert.EqualValues(t, 2, c.compilations.Load())

	// A new generation of a: a is compiled again, b is not.
	a2 := set("a", 2, rule("false"))
	third, err := c.Compile([]RuleSet{a2, b1})
	require.NoError(t, err)
	assert.EqualValues(t, 3, c.compilations.Load())
	assert.Equal(t, "false", third.All()[0].Rule.Expression)
	assert.Same(t, first.All()[2], third.All()[1])

	// A set without a UID is compiled each time.
	noUID := RuleSet{Kind: KindHealthRuleSet, Namespace: "shop", Name: "file", Rules: []convoyv1alpha1.HealthRule{rule("true")}}
	_, err = c.Compile([]RuleSet{noUID})
	require.NoError(t, err)
	_, err = c.Compile([]RuleSet{noUID})
	require.NoError(t, err)
	assert.EqualValues(t, 5, c.compilations.Load())

	// Forget drops a set.
	c.Forget(a2.UID)
	_, err = c.Compile([]RuleSet{a2})
	require.NoError(t, err)
	assert.EqualValues(t, 6, c.compilations.Load())
}

func TestCompilerKeepsAnInvalidSetUntilItChanges(t *testing.T) {
	c := NewCompiler(0)
	bad := set("bad", 1, rule("nope("))
	_, err1 := c.Compile([]RuleSet{bad})
	_, err2 := c.Compile([]RuleSet{bad})
	ruleInvalid(t, err1)
	assert.Same(t, err1, err2)
	assert.EqualValues(t, 1, c.compilations.Load())

	fixed := set("bad", 2, rule("true"))
	rules, err := c.Compile([]RuleSet{fixed})
	require.NoError(t, err)
	assert.Equal(t, 1, rules.Len())
	assert.EqualValues(t, 2, c.compilations.Load())
}

func TestCompilerConcurrentUse(t *testing.T) {
	c := NewCompiler(0)
	sets := []RuleSet{set("a", 1, rule("object.spec.replicas == 3")), set("b", 1, rule("has(object.spec)"))}
	obj := map[string]any{"spec": map[string]any{"replicas": int64(3)}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				rules, err := c.Compile(sets)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, ResultPass, Evaluate(t.Context(), rules.For("apps/v1", "deployments"), obj).Result)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 2, c.compilations.Load())
}

func TestRulesFor(t *testing.T) {
	star := convoyv1alpha1.HealthRule{APIVersion: "apps/v1", Resources: []string{"*"}, Expression: "true"}
	two := convoyv1alpha1.HealthRule{APIVersion: "apps/v1", Resources: []string{"statefulsets", "daemonsets"}, Expression: "true"}
	core := convoyv1alpha1.HealthRule{APIVersion: "v1", Resources: []string{"pods"}, Expression: "true"}
	rules, err := NewCompiler(0).Compile([]RuleSet{
		{Kind: KindGlobalHealthRuleSet, Name: "g", UID: "g", Rules: []convoyv1alpha1.HealthRule{rule("true"), star}},
		set("l", 1, two, core, rule("true")),
	})
	require.NoError(t, err)
	names := func(rs []*CompiledRule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	assert.Equal(t, []string{"rule 0 of GlobalHealthRuleSet g", "rule 1 of GlobalHealthRuleSet g", "rule 2 of HealthRuleSet shop/l"},
		names(rules.For("apps/v1", "deployments")))
	assert.Equal(t, []string{"rule 1 of GlobalHealthRuleSet g", "rule 0 of HealthRuleSet shop/l"},
		names(rules.For("apps/v1", "daemonsets")))
	assert.Equal(t, []string{"rule 1 of GlobalHealthRuleSet g"}, names(rules.For("apps/v1", "replicasets")))
	assert.Equal(t, []string{"rule 1 of HealthRuleSet shop/l"}, names(rules.For("v1", "pods")))
	assert.Empty(t, rules.For("v1", "services"))
	assert.Empty(t, rules.For("apps/v1beta2", "deployments"), "apiVersion must be equal")
	assert.Empty(t, rules.For("apps", "deployments"))
	assert.Equal(t, 5, rules.Len())

	var none *Rules
	assert.Nil(t, none.For("apps/v1", "deployments"))
	assert.Zero(t, none.Len())
	assert.Nil(t, none.All())

	empty, err := NewCompiler(0).Compile(nil)
	require.NoError(t, err)
	assert.Nil(t, empty.For("apps/v1", "deployments"))
}
