package health

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// FuzzCompile: any expression compiles or gives a *failure.Error of reason
// RuleInvalid that names the rule, never a panic; a compiled rule evaluates,
// within its cost limit, to a verdict (Pass, or Fail or Error with a
// message).
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
			f, ok := failure.As(err)
			if !ok || f.Reason != ReasonRuleInvalid || !strings.Contains(f.Message, "rule 0 of HealthRuleSet shop/fuzz") {
				t.Fatalf("%q: not a RuleInvalid failure that names the rule: %#v", expression, err)
			}
			return
		}
		v := Evaluate(context.Background(), rules.All(), map[string]any{"spec": map[string]any{"replicas": int64(2), "items": []any{int64(1), "a"}}, "data": map[string]any{"k": "v"}})
		switch v.Result {
		case ResultPass:
		case ResultFail, ResultSuspended, ResultError:
			if v.Message == "" || v.Rule == nil {
				t.Fatalf("%q: a %s verdict without its message or rule", expression, v.Result)
			}
		default:
			t.Fatalf("no verdict for %q: %+v", expression, v)
		}
	})
}

// FuzzDefaultRules: the default rules, on any object of a kind they cover
// (the cases' objects, mutated), give a verdict with a message and never
// panic; a field of an unexpected type makes a rule Unknown, not the pass.
func FuzzDefaultRules(f *testing.F) {
	rules, err := NewCompiler(0).Compile(defaultSelection(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, obj := range caseObjects(f) {
		data, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if utiljson.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		v := Evaluate(context.Background(), rulesFor(rules, obj), obj)
		switch v.Result {
		case ResultPass:
		case ResultFail, ResultSuspended, ResultError:
			if v.Message == "" || v.Rule == nil {
				t.Fatalf("a %s verdict without its message or rule on %s", v.Result, data)
			}
		default:
			t.Fatalf("no verdict on %s: %+v", data, v)
		}
	})
}
