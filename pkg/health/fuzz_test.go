package health

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
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
//
// Besides the bytes the fuzzer mutates, it picks a field of the object
// (field, any node of its tree; 0: none) and gives it a value of another type
// (replacement), as an object whose CRD changed the type of a field, or
// whose controller writes a quantity as a string, would. A health pass of
// an inventory of that object and a healthy one then completes: the object
// is Unknown exactly when its rules cannot be evaluated, and the other one
// stays Healthy.
func FuzzDefaultRules(f *testing.F) {
	rules, err := NewCompiler(0).Compile(defaultSelection(f))
	if err != nil {
		f.Fatal(err)
	}
	for i, obj := range caseObjects(f) {
		data, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(0), uint8(0))
		f.Add(data, uint16(i+1), uint8(i))
	}
	// A Deployment whose controller wrote status.replicas as a string.
	replicas := deploymentObject("web", 3, 3)
	replicas["status"].(map[string]any)["replicas"] = "3"
	data, err := json.Marshal(replicas)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, uint16(0), uint8(0))
	healthy := deploymentObject("healthy", 3, 3)
	healthyKey := convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "healthy"}
	f.Fuzz(func(t *testing.T, data []byte, field uint16, replacement uint8) {
		var obj map[string]any
		if utiljson.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		// The inventory has the kind of the object as rendered, whatever
		// the live object's fields say after the change.
		gvk := gvkOf(obj)
		retype(obj, int(field), int(replacement))
		shown, err := json.Marshal(obj)
		require.NoError(t, err)
		v := Evaluate(context.Background(), rules.For(gvk.GroupVersion().String(), pluralOf(gvk)), obj)
		switch v.Result {
		case ResultPass:
		case ResultFail, ResultSuspended, ResultError:
			if v.Message == "" || v.Rule == nil {
				t.Fatalf("a %s verdict without its message or rule on %s", v.Result, shown)
			}
		default:
			t.Fatalf("no verdict on %s: %+v", shown, v)
		}

		key := convoyv1alpha1.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: "shop", Name: "fuzzed"}
		reader := newMemReader()
		reader.resources[gvk] = pluralOf(gvk)
		reader.objects[key], reader.objects[healthyKey] = obj, healthy
		out := Pass(context.Background(), Input{
			Release: assessedRelease(nil),
			Inventory: inventoryOf([]convoyv1alpha1.InventoryEntry{
				{ObjectKey: key, Version: gvk.Version, RenderRef: renderA},
				{ObjectKey: healthyKey, Version: "v1", RenderRef: renderA},
			}),
			Rules: rules, Reader: reader, Now: time.Now(),
		})
		require.False(t, out.Panicked, "the pass panicked on %s: %s", shown, out.Condition.Message)
		require.NotEqual(t, ReasonCannotAssess, out.Condition.Reason, "the pass failed on %s: %s", shown, out.Condition.Message)
		require.Len(t, out.Entries, 2)
		st := entryOf(t, out, key)
		require.Equal(t, v.State(), st.State, "%s on %s: %s", v.Result, shown, st.Message)
		if v.Result == ResultError {
			require.Equal(t, 1, out.EvaluationErrors)
			require.Equal(t, truncate.String(v.Message, truncate.InventoryMessage), st.Message)
		} else {
			require.Zero(t, out.EvaluationErrors)
		}
		require.Equal(t, convoyv1alpha1.HealthHealthy, entryOf(t, out, healthyKey).State)
	})
}

// otherTypes are the values retype gives a field: one of each type a
// decoded JSON value has but null (which the rules see as no field).
var otherTypes = []any{"3", int64(3), 1.5, true, []any{int64(1)}, map[string]any{"a": "b"}}

// retype replaces the node n of obj (1 the first in a walk of its tree in
// key order, modulo its size; 0 none) by otherTypes[i], or the next one when
// that has the node's type.
func retype(obj map[string]any, n, i int) {
	if n == 0 {
		return
	}
	var nodes []func(any) // setters of the nodes, in walk order
	var types []string
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		nodes, types = append(nodes, set), append(types, fmt.Sprintf("%T", v))
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], func(nv any) { x[k] = nv })
			}
		case []any:
			for j := range x {
				walk(x[j], func(nv any) { x[j] = nv })
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		walk(obj[k], func(nv any) { obj[k] = nv })
	}
	if len(nodes) == 0 {
		return
	}
	n = (n - 1) % len(nodes)
	value := otherTypes[i%len(otherTypes)]
	if fmt.Sprintf("%T", value) == types[n] {
		value = otherTypes[(i+1)%len(otherTypes)]
	}
	nodes[n](value)
}
