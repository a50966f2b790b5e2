package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

const (
	add     = subresourcesv1alpha1.ChangeAdd
	remove  = subresourcesv1alpha1.ChangeRemove
	replace = subresourcesv1alpha1.ChangeReplace
)

// fc builds an expected FieldChange; "" is an absent side.
func fc(path string, op subresourcesv1alpha1.ChangeOp, desired, live string) subresourcesv1alpha1.FieldChange {
	c := subresourcesv1alpha1.FieldChange{Path: path, Op: op}
	if desired != "" {
		c.Desired = &runtime.RawExtension{Raw: []byte(desired)}
	}
	if live != "" {
		c.Live = &runtime.RawExtension{Raw: []byte(live)}
	}
	return c
}

func container(name, image string, extra ...any) map[string]any {
	c := map[string]any{"name": name, "image": image}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return c
}

func podSpec(containers ...any) map[string]any {
	return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}}}
}

func TestDiffObjects(t *testing.T) {
	tests := []struct {
		name          string
		desired, live map[string]any
		want          []subresourcesv1alpha1.FieldChange
	}{
		{
			name:    "equal",
			desired: map[string]any{"spec": map[string]any{"replicas": int64(3), "paused": false, "x": nil}},
			live:    map[string]any{"spec": map[string]any{"replicas": int64(3), "paused": false, "x": nil}},
		},
		{
			name:    "numbers compare by value",
			desired: map[string]any{"a": int64(2), "b": 2.5, "c": 3},
			live:    map[string]any{"a": float64(2), "b": 2.5, "c": int64(3)},
		},
		{
			name:    "scalar replace",
			desired: map[string]any{"spec": map[string]any{"replicas": int64(3)}},
			live:    map[string]any{"spec": map[string]any{"replicas": int64(2)}},
			want:    []subresourcesv1alpha1.FieldChange{fc("spec.replicas", replace, `3`, `2`)},
		},
		{
			name:    "type change is a replace",
			desired: map[string]any{"spec": map[string]any{"port": "http"}},
			live:    map[string]any{"spec": map[string]any{"port": int64(80)}},
			want:    []subresourcesv1alpha1.FieldChange{fc("spec.port", replace, `"http"`, `80`)},
		},
		{
			name:    "map add and remove",
			desired: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "front"}}},
			live:    map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", "old": "x"}}},
			want: []subresourcesv1alpha1.FieldChange{
				fc("metadata.labels.old", remove, "", `"x"`),
				fc("metadata.labels.tier", add, `"front"`, ""),
			},
		},
		{
			name:    "a subtree added whole",
			desired: map[string]any{"spec": map[string]any{"strategy": map[string]any{"type": "Recreate"}}},
			live:    map[string]any{"spec": map[string]any{}},
			want:    []subresourcesv1alpha1.FieldChange{fc("spec.strategy", add, `{"type":"Recreate"}`, "")},
		},
		{
			name:    "nested",
			desired: map[string]any{"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}},
			live:    map[string]any{"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "api"}}}},
			want:    []subresourcesv1alpha1.FieldChange{fc("spec.selector.matchLabels.app", replace, `"web"`, `"api"`)},
		},
		{
			name:    "containers reordered with the same content",
			desired: podSpec(container("app", "shop:1"), container("proxy", "envoy:1")),
			live:    podSpec(container("proxy", "envoy:1"), container("app", "shop:1")),
		},
		{
			name:    "container image by name",
			desired: podSpec(container("proxy", "envoy:1"), container("app", "shop:2")),
			live:    podSpec(container("app", "shop:1"), container("proxy", "envoy:1")),
			want:    []subresourcesv1alpha1.FieldChange{fc("spec.template.spec.containers[name=app].image", replace, `"shop:2"`, `"shop:1"`)},
		},
		{
			name:    "container added and removed",
			desired: podSpec(container("app", "shop:1"), container("sidecar", "log:1")),
			live:    podSpec(container("app", "shop:1"), container("old", "x:1")),
			want: []subresourcesv1alpha1.FieldChange{
				fc("spec.template.spec.containers[name=old]", remove, "", `{"image":"x:1","name":"old"}`),
				fc("spec.template.spec.containers[name=sidecar]", add, `{"image":"log:1","name":"sidecar"}`, ""),
			},
		},
		{
			name: "ports by containerPort",
			desired: podSpec(container("app", "shop:1", "ports", []any{
				map[string]any{"containerPort": int64(8080), "protocol": "TCP"},
				map[string]any{"containerPort": int64(9090), "protocol": "UDP"},
			})),
			live: podSpec(container("app", "shop:1", "ports", []any{
				map[string]any{"containerPort": int64(9090), "protocol": "TCP"},
				map[string]any{"containerPort": int64(8080), "protocol": "TCP"},
			})),
			want: []subresourcesv1alpha1.FieldChange{
				fc("spec.template.spec.containers[name=app].ports[containerPort=9090].protocol", replace, `"UDP"`, `"TCP"`),
			},
		},
		{
			name: "ports by name when all have one",
			desired: podSpec(container("app", "shop:1", "ports", []any{
				map[string]any{"name": "http", "containerPort": int64(8081)},
			})),
			live: podSpec(container("app", "shop:1", "ports", []any{
				map[string]any{"name": "http", "containerPort": int64(8080)},
			})),
			want: []subresourcesv1alpha1.FieldChange{
				fc("spec.template.spec.containers[name=app].ports[name=http].containerPort", replace, `8081`, `8080`),
			},
		},
		{
			name: "env by name",
			desired: podSpec(container("app", "shop:1", "env", []any{
				map[string]any{"name": "LOG", "value": "debug"},
				map[string]any{"name": "DB", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "url"}}},
			})),
			live: podSpec(container("app", "shop:1", "env", []any{
				map[string]any{"name": "DB", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "url"}}},
				map[string]any{"name": "LOG", "value": "info"},
				map[string]any{"name": "GONE", "value": "1"},
			})),
			want: []subresourcesv1alpha1.FieldChange{
				fc("spec.template.spec.containers[name=app].env[name=GONE]", remove, "", `{"name":"GONE","value":"1"}`),
				fc("spec.template.spec.containers[name=app].env[name=LOG].value", replace, `"debug"`, `"info"`),
			},
		},
		{
			name: "duplicate names fall back to the next key",
			desired: podSpec(container("app", "shop:1", "volumeMounts", []any{
				map[string]any{"name": "data", "mountPath": "/b", "subPath": "b"},
				map[string]any{"name": "data", "mountPath": "/a", "subPath": "a2"},
			})),
			live: podSpec(container("app", "shop:1", "volumeMounts", []any{
				map[string]any{"name": "data", "mountPath": "/a", "subPath": "a"},
				map[string]any{"name": "data", "mountPath": "/b", "subPath": "b"},
			})),
			want: []subresourcesv1alpha1.FieldChange{
				fc("spec.template.spec.containers[name=app].volumeMounts[mountPath=/a].subPath", replace, `"a2"`, `"a"`),
			},
		},
		{
			name:    "list of scalars by index",
			desired: map[string]any{"args": []any{"--a", "--b=2", "--c"}},
			live:    map[string]any{"args": []any{"--a", "--b=1", "--c"}},
			want:    []subresourcesv1alpha1.FieldChange{fc("args[1]", replace, `"--b=2"`, `"--b=1"`)},
		},
		{
			name:    "list of scalars of different length: one replace",
			desired: map[string]any{"args": []any{"--a", "--b"}},
			live:    map[string]any{"args": []any{"--a"}},
			want:    []subresourcesv1alpha1.FieldChange{fc("args", replace, `["--a","--b"]`, `["--a"]`)},
		},
		{
			name:    "list of maps without a key, same length: by index",
			desired: map[string]any{"rules": []any{map[string]any{"verbs": []any{"get"}}, map[string]any{"verbs": []any{"list"}}}},
			live:    map[string]any{"rules": []any{map[string]any{"verbs": []any{"get"}}, map[string]any{"verbs": []any{"watch"}}}},
			want:    []subresourcesv1alpha1.FieldChange{fc("rules[1].verbs[0]", replace, `"list"`, `"watch"`)},
		},
		{
			name:    "list of maps without a key, other length: one replace",
			desired: map[string]any{"rules": []any{map[string]any{"verbs": []any{"get"}}}},
			live:    map[string]any{"rules": []any{}},
			want:    []subresourcesv1alpha1.FieldChange{fc("rules", replace, `[{"verbs":["get"]}]`, `[]`)},
		},
		{
			name:    "indexes sort as numbers",
			desired: map[string]any{"a": []any{"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10"}},
			live:    map[string]any{"a": []any{"x0", "x1", "y2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "y10"}},
			want:    []subresourcesv1alpha1.FieldChange{fc("a[2]", replace, `"x2"`, `"y2"`), fc("a[10]", replace, `"x10"`, `"y10"`)},
		},
		{
			name:    "annotation keys with dots and slashes are quoted",
			desired: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/x": "1", "plain-key_1": "a"}}},
			live:    map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/x": "2", "plain-key_1": "b"}}},
			want: []subresourcesv1alpha1.FieldChange{
				fc(`metadata.annotations["example.com/x"]`, replace, `"1"`, `"2"`),
				fc(`metadata.annotations.plain-key_1`, replace, `"a"`, `"b"`),
			},
		},
		{
			name:    "quoted list key values",
			desired: map[string]any{"items": []any{map[string]any{"key": "a b", "v": int64(1)}, map[string]any{"key": "c", "v": int64(1)}}},
			live:    map[string]any{"items": []any{map[string]any{"key": "c", "v": int64(1)}, map[string]any{"key": "a b", "v": int64(2)}}},
			want:    []subresourcesv1alpha1.FieldChange{fc(`items[key="a b"].v`, replace, `1`, `2`)},
		},
		{
			name:    "null against a value",
			desired: map[string]any{"spec": map[string]any{"x": nil}},
			live:    map[string]any{"spec": map[string]any{"x": "v"}},
			want:    []subresourcesv1alpha1.FieldChange{fc("spec.x", replace, `null`, `"v"`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffObjects(tt.desired, tt.live)
			require.Len(t, got, len(tt.want), "%v", got)
			for i := range tt.want {
				assert.Equal(t, tt.want[i].Path, got[i].Path)
				assert.Equal(t, tt.want[i].Op, got[i].Op, got[i].Path)
				assertRaw(t, tt.want[i].Desired, got[i].Desired, got[i].Path+" desired")
				assertRaw(t, tt.want[i].Live, got[i].Live, got[i].Path+" live")
			}
		})
	}
}

func assertRaw(t *testing.T, want, got *runtime.RawExtension, msg string) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got, msg)
		return
	}
	if assert.NotNil(t, got, msg) {
		assert.JSONEq(t, string(want.Raw), string(got.Raw), msg)
	}
}

func TestDiffObjectsLargeKeyedList(t *testing.T) {
	// Past smallList, elements are matched through an index map.
	var desired, live []any
	for i := range 40 {
		desired = append(desired, map[string]any{"name": string(rune('a'+i%26)) + string(rune('a'+i/26)), "v": int64(i)})
	}
	for i := 39; i >= 0; i-- {
		v := int64(i)
		if i == 7 {
			v = 700
		}
		live = append(live, map[string]any{"name": string(rune('a'+i%26)) + string(rune('a'+i/26)), "v": v})
	}
	got := diffObjects(map[string]any{"env": desired}, map[string]any{"env": live})
	require.Len(t, got, 1)
	assert.Equal(t, "env[name=ha].v", got[0].Path)
	assert.JSONEq(t, `7`, string(got[0].Desired.Raw))
	assert.JSONEq(t, `700`, string(got[0].Live.Raw))

	// Duplicates among many elements: no key, by index (same length).
	dup := append([]any{}, live...)
	dup[0] = map[string]any{"name": "aa", "v": int64(39)}
	assert.Equal(t, "", listKey(dup, dup))
}

func TestDiffObjectsDoesNotModifyInputs(t *testing.T) {
	desired := podSpec(container("proxy", "envoy:1"), container("app", "shop:2"))
	live := podSpec(container("app", "shop:1"), container("proxy", "envoy:1"))
	d0, l0 := deepCopyMap(desired), deepCopyMap(live)
	diffObjects(desired, live)
	assert.Equal(t, d0, desired)
	assert.Equal(t, l0, live)
}

func deepCopyMap(m map[string]any) map[string]any {
	return runtime.DeepCopyJSONValue(m).(map[string]any)
}
