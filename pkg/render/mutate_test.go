package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

const mutateManifests = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: frontend}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: web
        image: nginx:1
        ports: [{containerPort: 80}]
      - name: sidecar
        image: envoy:1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: other
  labels: {tier: backend}
spec:
  replicas: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {tier: frontend}
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  annotations: {keep: "yes"}
spec:
  items: [a, b]
  size: 1
  nested: {a: 1, b: 2}
`

func renderMutations(t *testing.T, mutations ...convoyv1alpha1.Mutation) *Render {
	t.Helper()
	r := newTestRenderer(configMap("src", map[string]string{"all.yaml": mutateManifests}))
	return renderOK(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) { s.Mutations = mutations }))
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestMutationStrategicMergePatch(t *testing.T) {
	out := renderMutations(t, convoyv1alpha1.Mutation{
		Target: convoyv1alpha1.MutationTarget{Kind: "Deployment", Name: "web"},
		Patch:  rawJSON(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`),
	})
	containers, _, _ := unstructured.NestedSlice(find(t, out, "Deployment", "web").Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 2, "containers merge by name, the list is not replaced")
	assert.Equal(t, map[string]any{"name": "web", "image": "nginx:2", "ports": []any{map[string]any{"containerPort": int64(80)}}}, containers[0])
	assert.Equal(t, map[string]any{"name": "sidecar", "image": "envoy:1"}, containers[1])
}

func TestMutationJSONMergePatchOnCustomKind(t *testing.T) {
	out := renderMutations(t, convoyv1alpha1.Mutation{
		Target: convoyv1alpha1.MutationTarget{Group: "example.com", Kind: "Widget"},
		Patch:  rawJSON(`{"spec":{"items":["c"],"size":null,"nested":{"b":3}}}`),
	})
	assert.Equal(t, map[string]any{
		"items":  []any{"c"}, // a merge patch replaces lists
		"nested": map[string]any{"a": int64(1), "b": int64(3)},
	}, find(t, out, "Widget", "w").Object["spec"])
}

func TestMutationJSONPatch(t *testing.T) {
	out := renderMutations(t, convoyv1alpha1.Mutation{
		Target: convoyv1alpha1.MutationTarget{Kind: "Deployment", Name: "web"},
		JSONPatch: []convoyv1alpha1.JSONPatchOperation{
			{Op: "test", Path: "/spec/replicas", Value: rawJSON(`1`)},
			{Op: "replace", Path: "/spec/replicas", Value: rawJSON(`5`)},
			{Op: "remove", Path: "/spec/template/spec/containers/1"},
			{Op: "add", Path: "/metadata/labels/patched", Value: rawJSON(`"true"`)},
			{Op: "copy", From: "/metadata/labels/tier", Path: "/metadata/labels/copied"},
		},
	})
	web := find(t, out, "Deployment", "web")
	replicas, _, _ := unstructured.NestedInt64(web.Object, "spec", "replicas")
	assert.Equal(t, int64(5), replicas)
	containers, _, _ := unstructured.NestedSlice(web.Object, "spec", "template", "spec", "containers")
	assert.Len(t, containers, 1)
	assert.Equal(t, map[string]string{"tier": "frontend", "patched": "true", "copied": "frontend"}, web.GetLabels())
}

func TestMutationLabelsAndAnnotations(t *testing.T) {
	out := renderMutations(t,
		convoyv1alpha1.Mutation{Labels: map[string]string{"team": "a", "tier": "overridden"}},
		convoyv1alpha1.Mutation{
			Target:      convoyv1alpha1.MutationTarget{Kind: "Widget"},
			Annotations: map[string]string{"note": "hi"},
		},
	)
	for _, u := range out.Objects {
		assert.Equal(t, "a", u.GetLabels()["team"], describe(u))
		if _, had := u.GetLabels()["tier"]; had {
			assert.Equal(t, "overridden", u.GetLabels()["tier"])
		}
	}
	assert.Equal(t, map[string]string{"keep": "yes", "note": "hi"}, find(t, out, "Widget", "w").GetAnnotations())
	assert.Empty(t, find(t, out, "Service", "web").GetAnnotations())
}

func TestMutationTargets(t *testing.T) {
	all := []string{"v1 Service demo/web", "apps/v1 Deployment other/api", "apps/v1 Deployment demo/web", "example.com/v1 Widget demo/w"}
	tests := []struct {
		name   string
		target convoyv1alpha1.MutationTarget
		want   []string // objects that get the label
	}{
		{name: "empty target selects all", want: all},
		{name: "group", target: convoyv1alpha1.MutationTarget{Group: "apps"}, want: []string{"apps/v1 Deployment other/api", "apps/v1 Deployment demo/web"}},
		{name: "version", target: convoyv1alpha1.MutationTarget{Version: "v1", Group: "example.com"}, want: []string{"example.com/v1 Widget demo/w"}},
		{name: "version alone", target: convoyv1alpha1.MutationTarget{Version: "v2"}, want: nil},
		{name: "kind", target: convoyv1alpha1.MutationTarget{Kind: "Service"}, want: []string{"v1 Service demo/web"}},
		{name: "name", target: convoyv1alpha1.MutationTarget{Name: "web"}, want: []string{"v1 Service demo/web", "apps/v1 Deployment demo/web"}},
		{name: "namespace after defaulting", target: convoyv1alpha1.MutationTarget{Namespace: "other"}, want: []string{"apps/v1 Deployment other/api"}},
		{name: "namespace defaulted", target: convoyv1alpha1.MutationTarget{Namespace: "demo", Kind: "Deployment"}, want: []string{"apps/v1 Deployment demo/web"}},
		{
			name:   "labelSelector matchLabels",
			target: convoyv1alpha1.MutationTarget{LabelSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "frontend"}}},
			want:   []string{"v1 Service demo/web", "apps/v1 Deployment demo/web"},
		},
		{
			name: "labelSelector matchExpressions",
			target: convoyv1alpha1.MutationTarget{LabelSelector: &convoyv1alpha1.LabelSelector{MatchExpressions: []convoyv1alpha1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"frontend"}},
			}}},
			want: []string{"apps/v1 Deployment other/api", "example.com/v1 Widget demo/w"},
		},
		{name: "empty labelSelector selects all", target: convoyv1alpha1.MutationTarget{LabelSelector: &convoyv1alpha1.LabelSelector{}}, want: all},
		{
			name:   "all fields",
			target: convoyv1alpha1.MutationTarget{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web", Namespace: "demo", LabelSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "frontend"}}},
			want:   []string{"apps/v1 Deployment demo/web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderMutations(t, convoyv1alpha1.Mutation{Target: tt.target, Labels: map[string]string{"hit": "yes"}})
			var got []string
			for _, u := range out.Objects {
				if u.GetLabels()["hit"] == "yes" {
					got = append(got, describe(u))
				}
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}

func TestMutationsInOrder(t *testing.T) {
	out := renderMutations(t,
		convoyv1alpha1.Mutation{Target: convoyv1alpha1.MutationTarget{Kind: "Service"}, Labels: map[string]string{"step": "one"}},
		convoyv1alpha1.Mutation{
			Target: convoyv1alpha1.MutationTarget{LabelSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"step": "one"}}},
			Labels: map[string]string{"step": "two"},
		},
	)
	assert.Equal(t, "two", find(t, out, "Service", "web").GetLabels()["step"])
}

func TestMutationErrors(t *testing.T) {
	ok := convoyv1alpha1.Mutation{Labels: map[string]string{"a": "b"}}
	tests := []struct {
		name     string
		mutation convoyv1alpha1.Mutation
		message  []string
	}{
		{
			name: "JSON patch path missing",
			mutation: convoyv1alpha1.Mutation{
				Target:    convoyv1alpha1.MutationTarget{Kind: "Deployment", Name: "web"},
				JSONPatch: []convoyv1alpha1.JSONPatchOperation{{Op: "remove", Path: "/spec/paused"}},
			},
			message: []string{"mutation 1 (jsonPatch) on Deployment.apps demo/web: JSON patch:"},
		},
		{
			name: "JSON patch test fails",
			mutation: convoyv1alpha1.Mutation{
				Target:    convoyv1alpha1.MutationTarget{Kind: "Widget"},
				JSONPatch: []convoyv1alpha1.JSONPatchOperation{{Op: "test", Path: "/spec/size", Value: rawJSON(`2`)}},
			},
			message: []string{"mutation 1 (jsonPatch) on Widget.example.com demo/w"},
		},
		{
			name: "patch removes the name",
			mutation: convoyv1alpha1.Mutation{
				Target: convoyv1alpha1.MutationTarget{Kind: "Widget"},
				Patch:  rawJSON(`{"metadata":{"name":null}}`),
			},
			message: []string{"mutation 1 (patch) on Widget.example.com demo/w: patched object:", "has no metadata.name"},
		},
		{
			name: "strategic merge patch that is not an object",
			mutation: convoyv1alpha1.Mutation{
				Target: convoyv1alpha1.MutationTarget{Kind: "Deployment", Name: "web"},
				Patch:  rawJSON(`["not", "an", "object"]`),
			},
			message: []string{"mutation 1 (patch) on Deployment.apps demo/web: strategic merge patch:"},
		},
		{
			name: "invalid labelSelector",
			mutation: convoyv1alpha1.Mutation{
				Target: convoyv1alpha1.MutationTarget{LabelSelector: &convoyv1alpha1.LabelSelector{MatchExpressions: []convoyv1alpha1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn},
				}}},
				Labels: map[string]string{"a": "b"},
			},
			message: []string{"mutation 1: target.labelSelector"},
		},
		{
			name:     "sets nothing",
			mutation: convoyv1alpha1.Mutation{Target: convoyv1alpha1.MutationTarget{Kind: "Widget"}},
			message:  []string{"mutation 1: sets none of patch, jsonPatch, labels, annotations"},
		},
		{
			name:     "sets two",
			mutation: convoyv1alpha1.Mutation{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"a": "b"}},
			message:  []string{"mutation 1: sets more than one", "labels, annotations"},
		},
		{
			name: "bad JSON patch operation",
			mutation: convoyv1alpha1.Mutation{
				JSONPatch: []convoyv1alpha1.JSONPatchOperation{{Op: "frobnicate", Path: "/spec"}},
			},
			message: []string{"mutation 1 (jsonPatch)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRenderer(configMap("src", map[string]string{"all.yaml": mutateManifests}))
			rerr := renderErr(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
				s.Mutations = []convoyv1alpha1.Mutation{ok, tt.mutation}
			}), ReasonMutationFailed)
			for _, m := range tt.message {
				assert.Contains(t, rerr.Message, m)
			}
		})
	}
}
