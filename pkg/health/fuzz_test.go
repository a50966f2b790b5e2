package health

import (
	"context"
	"testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// FuzzCompile: any expression compiles or gives a *failure.Error, never a panic; a
// compiled rule evaluates, within its cost limit, to a verdict.
func FuzzCompile(f *testing.F) {
	for _, e := range []string{
		"object.status.readyReplicas == object.spec.replicas",
		"size(object.data)",
		"object.spec.items.all(a, object.spec.items.all(b, a == b))",
		"[1,2,3].map(x, x * 2).exists(y, y > 4)",
		"'a'.matches('(a+)+$')",
		"object.?spec.?replicas.orValue(1) >= 1",
	} {
		f.Add(e, "'message: ' + string(object)")
	}
	f.Fuzz(func(t *testing.T, expression, messageExpression string) {
		rules, err := NewCompiler(10_000).Compile([]RuleSet{{Kind: KindHealthRuleSet, Namespace: "shop", Name: "fuzz",
			Rules: []convoyv1alpha1.HealthRule{{APIVersion: "v1", Resources: []string{"*"}, Expression: expression, MessageExpression: messageExpression}}}})
		if err != nil {
			return
		}
		v := Evaluate(context.Background(), rules.All(), map[string]any{"spec": map[string]any{"replicas": int64(2), "items": []any{int64(1), "a"}}, "data": map[string]any{"k": "v"}})
		if v.Result == "" {
			t.Fatalf("no verdict for %q", expression)
		}
	})
}
