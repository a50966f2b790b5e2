package compare

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzDiff: the diff of any two JSON objects never panics, is empty exactly
// when they are equal after normalizing (the fields the API server sets
// removed; lists whose elements a key identifies compared by that key, in
// any order; numbers by value), and lists no path twice.
func FuzzDiff(f *testing.F) {
	f.Add(`{"spec":{"replicas":1,"containers":[{"name":"a","image":"x"}]}}`, `{"spec":{"replicas":2,"containers":[{"name":"a","image":"y"},{"name":"b"}]}}`)
	f.Add(`{"a":[1,2,3]}`, `{"a":[3,2,1]}`)
	f.Add(`{"a":{"b.c":"d"}}`, `{"a":null}`)
	f.Add(`{"metadata":{"annotations":{"x/y":"1"}}}`, `{}`)
	f.Add(`{"a":[{"name":"x","v":1},{"name":"y","v":2}]}`, `{"a":[{"name":"y","v":2},{"name":"x","v":1}]}`)
	f.Add(`{"a":[{"name":"x","v":1},{"name":"y","v":2}]}`, `{"a":[{"name":"y","v":2},{"name":"x","v":3}]}`)
	f.Add(`{"metadata":{"resourceVersion":"1","name":"a"},"status":{"x":1}}`, `{"metadata":{"name":"a"}}`)
	f.Add(`{"a":1.0}`, `{"a":1}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var desiredObj, liveObj map[string]any
		if json.Unmarshal([]byte(a), &desiredObj) != nil || json.Unmarshal([]byte(b), &liveObj) != nil || desiredObj == nil || liveObj == nil {
			return
		}
		desired := normalize(&unstructured.Unstructured{Object: desiredObj}).Object
		live := normalize(&unstructured.Unstructured{Object: liveObj}).Object
		changes := diffObjects(desired, live)
		if equal := semanticallyEqual(desired, live); equal != (len(changes) == 0) {
			t.Fatalf("equal after normalizing: %v, but %d changes: %+v\n%s\n%s", equal, len(changes), changes, a, b)
		}
		seen := map[string]bool{}
		for _, c := range changes {
			if seen[c.Path] {
				t.Fatalf("path %s twice in %+v", c.Path, changes)
			}
			seen[c.Path] = true
		}
		if len(diffObjects(desired, desired)) != 0 {
			t.Fatalf("an object differs from itself: %v", a)
		}
	})
}

// semanticallyEqual is the equality the diff is meant to have, written
// apart from it: maps by key; a list whose elements a key identifies on both
// sides (listKey) as the set of its elements by that key; any other list
// element by element; numbers by value.
func semanticallyEqual(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !semanticallyEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		if key := listKey(av, bv); key != "" {
			for _, x := range av {
				found := false
				for _, y := range bv {
					if semanticallyEqual(x.(map[string]any)[key], y.(map[string]any)[key]) {
						found = semanticallyEqual(x, y)
						break
					}
				}
				if !found {
					return false
				}
			}
			return true
		}
		for i := range av {
			if !semanticallyEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	x, aNum := number(a)
	y, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && x == y
	}
	return a == b
}
