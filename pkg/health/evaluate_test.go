package health

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// compiled compiles rules as one HealthRuleSet shop/rules.
func compiled(t *testing.T, costLimit uint64, rules ...convoyv1alpha1.HealthRule) []*CompiledRule {
	t.Helper()
	rs, err := NewCompiler(costLimit).Compile([]RuleSet{set("rules", 1, rules...)})
	require.NoError(t, err)
	return rs.All()
}

func msg(r convoyv1alpha1.HealthRule, message, messageExpression string) convoyv1alpha1.HealthRule {
	r.Message, r.MessageExpression = message, messageExpression
	return r
}

func TestEvaluate(t *testing.T) {
	web := object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status: {observedGeneration: 4, availableReplicas: 1}
`)
	tests := []struct {
		name    string
		rules   []convoyv1alpha1.HealthRule
		want    Result
		message string
		rule    int // index of the rule of the verdict, -1 for none
	}{
		{name: "all rules pass", want: ResultPass, rule: -1,
			rules: []convoyv1alpha1.HealthRule{rule("has(object.status)"), rule("object.status.observedGeneration == object.metadata.generation")}},
		{name: "the first failing rule gives the message", want: ResultFail, rule: 1, message: "1 of 3 replicas available",
			rules: []convoyv1alpha1.HealthRule{
				rule("true"),
				msg(rule("object.status.availableReplicas >= object.spec.replicas"), "", "string(object.status.availableReplicas) + ' of ' + string(object.spec.replicas) + ' replicas available'"),
				msg(rule("false"), "second failure", ""),
			}},
		{name: "the first failing rule says Suspended", want: ResultSuspended, rule: 1, message: "paused",
			rules: []convoyv1alpha1.HealthRule{
				rule("true"),
				suspends(msg(rule("object.status.availableReplicas >= 3"), "paused", "")),
				msg(rule("false"), "second failure", ""),
			}},
		{name: "a failing rule before a Suspended one wins", want: ResultFail, rule: 0, message: "first failure",
			rules: []convoyv1alpha1.HealthRule{
				msg(rule("false"), "first failure", ""),
				suspends(msg(rule("false"), "paused", "")),
			}},
		{name: "message", want: ResultFail, rule: 0, message: "not enough replicas",
			rules: []convoyv1alpha1.HealthRule{msg(rule("object.status.availableReplicas >= 3"), "not enough replicas", "")}},
		{name: "messageExpression wins over message", want: ResultFail, rule: 0, message: "only 1",
			rules: []convoyv1alpha1.HealthRule{msg(rule("object.status.availableReplicas >= 3"), "not enough replicas", "'only ' + string(object.status.availableReplicas)")}},
		{name: "messageExpression that fails falls back to message", want: ResultFail, rule: 0, message: "not enough replicas",
			rules: []convoyv1alpha1.HealthRule{msg(rule("false"), "not enough replicas", "'only ' + object.status.missing")}},
		{name: "messageExpression that returns no string falls back to message", want: ResultFail, rule: 0, message: "not enough replicas",
			rules: []convoyv1alpha1.HealthRule{msg(rule("false"), "not enough replicas", "object.spec.replicas")}},
		{name: "empty messageExpression result falls back to message", want: ResultFail, rule: 0, message: "not enough replicas",
			rules: []convoyv1alpha1.HealthRule{msg(rule("false"), "not enough replicas", "'  '")}},
		{name: "messageExpression that fails without message: default", want: ResultFail, rule: 0,
			message: "rule 0 of HealthRuleSet shop/rules failed: false",
			rules:   []convoyv1alpha1.HealthRule{msg(rule("false"), "", "object.nope")}},
		{name: "default message", want: ResultFail, rule: 1,
			message: "rule 1 of HealthRuleSet shop/rules failed: object.status.availableReplicas >= object.spec.replicas",
			rules:   []convoyv1alpha1.HealthRule{rule("true"), rule("object.status.availableReplicas\n  >= object.spec.replicas")}},
		{name: "messages fit on one line", want: ResultFail, rule: 0, message: "waiting for 2 more replicas",
			rules: []convoyv1alpha1.HealthRule{msg(rule("false"), "", "'waiting for\\n2 more replicas'")}},
		{name: "no such key", want: ResultError, rule: 0,
			message: "rule 0 of HealthRuleSet shop/rules cannot be evaluated: no such key: readyReplicas",
			rules:   []convoyv1alpha1.HealthRule{rule("object.status.readyReplicas >= 1")}},
		{name: "no such overload", want: ResultError, rule: 0,
			message: "rule 0 of HealthRuleSet shop/rules cannot be evaluated: no such overload",
			rules:   []convoyv1alpha1.HealthRule{rule("object.metadata.name > 3")}},
		{name: "dyn rule returning an int", want: ResultError, rule: 0,
			message: "rule 0 of HealthRuleSet shop/rules returned int 3, not a bool",
			rules:   []convoyv1alpha1.HealthRule{rule("object.spec.replicas")}},
		{name: "dyn rule returning a string", want: ResultError, rule: 0,
			message: "rule 0 of HealthRuleSet shop/rules returned string web, not a bool",
			rules:   []convoyv1alpha1.HealthRule{rule("object.metadata.name")}},
		{name: "a false wins over an error", want: ResultFail, rule: 1, message: "rule 1 of HealthRuleSet shop/rules failed: false",
			rules: []convoyv1alpha1.HealthRule{rule("object.status.nope"), rule("false"), rule("object.spec.replicas")}},
		{name: "the first error when nothing is false", want: ResultError, rule: 1,
			message: "rule 1 of HealthRuleSet shop/rules returned int 3, not a bool",
			rules:   []convoyv1alpha1.HealthRule{rule("true"), rule("object.spec.replicas"), rule("object.status.nope")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules := compiled(t, 0, tc.rules...)
			v := Evaluate(context.Background(), rules, web)
			assert.Equal(t, tc.want, v.Result, v.Message)
			if tc.want == ResultPass {
				assert.Empty(t, v.Message)
			} else {
				assert.Contains(t, v.Message, tc.message)
				if tc.want == ResultFail {
					assert.Equal(t, tc.message, v.Message)
				}
			}
			if tc.rule < 0 {
				assert.Nil(t, v.Rule)
			} else {
				assert.Same(t, rules[tc.rule], v.Rule)
			}
		})
	}
}

func TestEvaluateNoRule(t *testing.T) {
	// No rule: Healthy, and the object (not read) is not looked at.
	v := Evaluate(context.Background(), nil, nil)
	assert.Equal(t, Verdict{Result: ResultPass, Message: MessageNoRule}, v)
}

// bigList is an object whose spec.items holds n integers.
func bigList(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	return map[string]any{"spec": map[string]any{"items": items}}
}

func TestEvaluateCostLimit(t *testing.T) {
	nested := rule("object.spec.items.all(x, object.spec.items.all(y, x >= 0 || y >= 0))")

	// 2,000 × 2,000 iterations run past the default limit of 1,000,000.
	rules := compiled(t, 0, nested)
	v := Evaluate(context.Background(), rules, bigList(2000))
	assert.Equal(t, ResultError, v.Result)
	assert.Equal(t, "rule 0 of HealthRuleSet shop/rules cannot be evaluated: it exceeded the cost limit of 1000000", v.Message)

	// 20 × 20 do not.
	assert.Equal(t, ResultPass, Evaluate(context.Background(), rules, bigList(20)).Result)

	// The limit is the compiler's.
	small := compiled(t, 500, nested)
	v = Evaluate(context.Background(), small, bigList(40))
	assert.Equal(t, ResultError, v.Result)
	assert.Contains(t, v.Message, "exceeded the cost limit of 500")

	// A messageExpression past the limit falls back to the message.
	costlyMessage := compiled(t, 10_000, msg(rule("false"), "fallback", "string(object.spec.items.map(x, object.spec.items.filter(y, y < x).size()).size())"))
	v = Evaluate(context.Background(), costlyMessage, bigList(300))
	assert.Equal(t, Verdict{Result: ResultFail, Message: "fallback", Rule: costlyMessage[0]}, v)
}

func TestEvaluateCanceled(t *testing.T) {
	rules := compiled(t, 0, rule("object.spec.items.all(x, x >= 0)"))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("the pass is over"))
	v := Evaluate(ctx, rules, bigList(10_000))
	assert.Equal(t, ResultError, v.Result)
	assert.Equal(t, "rule 0 of HealthRuleSet shop/rules cannot be evaluated: the pass is over", v.Message)
}

func TestEvaluateRuleOnAMissingObject(t *testing.T) {
	// A nil object is an empty one, not a panic.
	v := Evaluate(context.Background(), compiled(t, 0, rule("object.status.ready")), nil)
	assert.Equal(t, ResultError, v.Result)
	assert.Contains(t, v.Message, "no such key: status")
}

// suspends sets whenFalse: Suspended on r.
func suspends(r convoyv1alpha1.HealthRule) convoyv1alpha1.HealthRule {
	r.WhenFalse = convoyv1alpha1.FailSuspended
	return r
}

func TestVerdictState(t *testing.T) {
	for result, want := range map[Result]convoyv1alpha1.HealthState{
		ResultPass: convoyv1alpha1.HealthHealthy, ResultFail: convoyv1alpha1.HealthProgressing,
		ResultSuspended: convoyv1alpha1.HealthSuspended, ResultError: convoyv1alpha1.HealthUnknown,
	} {
		assert.Equal(t, want, Verdict{Result: result}.State(), result)
	}
}

func TestWithoutNulls(t *testing.T) {
	clean := map[string]any{"a": int64(1), "b": map[string]any{"c": []any{map[string]any{"d": "x"}}}}
	assert.True(t, reflect.ValueOf(clean).Pointer() == reflect.ValueOf(withoutNulls(clean)).Pointer(), "an object without null is not copied")

	in := map[string]any{
		"status": map[string]any{"conditions": nil, "acceptedNames": map[string]any{"kind": "", "plural": ""}},
		"spec":   map[string]any{"items": []any{map[string]any{"a": nil, "b": int64(2)}, nil}},
		"keep":   "x",
	}
	before := fmt.Sprint(in)
	assert.Equal(t, map[string]any{
		"status": map[string]any{"acceptedNames": map[string]any{"kind": "", "plural": ""}},
		"spec":   map[string]any{"items": []any{map[string]any{"b": int64(2)}, nil}},
		"keep":   "x",
	}, withoutNulls(in))
	assert.Equal(t, before, fmt.Sprint(in), "the object is not changed")
	assert.Nil(t, withoutNulls(nil))

	// A rule sees a null field as absent.
	rules := compiled(t, 0, msg(rule("object.?status.?conditions.orValue([]).exists(c, c.type == 'Established')"), "not established", ""))
	v := Evaluate(context.Background(), rules, map[string]any{"status": map[string]any{"conditions": nil}})
	assert.Equal(t, ResultFail, v.Result, v.Message)
	assert.Equal(t, "not established", v.Message)
}
