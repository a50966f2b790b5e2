package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func TestRenderManifests(t *testing.T) {
	tests := []struct {
		name   string
		data   map[string]string
		target string
		want   []string // describe() of each object, in render order
	}{
		{
			name: "multi-document YAML, empty and comment-only documents skipped",
			data: map[string]string{"all.yaml": `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
---
# only a comment
---
apiVersion: v1
kind: Service
metadata: {name: b}
---
`},
			want: []string{"v1 ConfigMap demo/a", "v1 Service demo/b"},
		},
		{
			name: "keys in sorted order, .yml and .json read, other keys ignored",
			data: map[string]string{
				"b.yml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-yml}\n",
				"a.json":    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-json"}}` + "\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-json-2"}}`,
				"README.md": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-read}\n",
				"notes.txt": "not yaml: [",
				"yaml":      "not a manifest key",
			},
			want: []string{"v1 ConfigMap demo/from-json", "v1 ConfigMap demo/from-json-2", "v1 ConfigMap demo/from-yml"},
		},
		{
			name: "List flattened",
			data: map[string]string{"list.yaml": `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: one}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: two, namespace: other}
`},
			want: []string{"v1 ConfigMap demo/one", "apps/v1 Deployment other/two"},
		},
		{
			name: "namespaced gets the Release namespace, cluster-scoped none, unknown kind keeps its own",
			data: map[string]string{"x.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: no-ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: own-ns, namespace: elsewhere}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster, namespace: ignored}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: unknown-no-ns}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: unknown-ns, namespace: kept}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: known-crd-kind}
`},
			want: []string{
				"v1 ConfigMap demo/no-ns",
				"v1 ConfigMap elsewhere/own-ns",
				"v1 Namespace ns",
				"example.com/v1 Gadget unknown-no-ns",
				"example.com/v1 Gadget kept/unknown-ns",
				"example.com/v1 Widget demo/known-crd-kind",
				"rbac.authorization.k8s.io/v1 ClusterRole cluster",
			},
		},
		{
			name:   "targetNamespace",
			target: "prod",
			data: map[string]string{"x.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: b, namespace: pinned}
`},
			want: []string{"v1 ConfigMap prod/a", "apps/v1 Deployment pinned/b"},
		},
		{
			name: "a CRD in the render scopes its kind before the Scoper",
			data: map[string]string{"x.yaml": `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g}
`},
			want: []string{"apiextensions.k8s.io/v1 CustomResourceDefinition gadgets.example.com", "example.com/v1 Gadget demo/g"},
		},
		{
			name: "an empty manifest key renders nothing",
			data: map[string]string{"empty.yaml": "# nothing yet\n"},
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRenderer(configMap("src", tt.data))
			out := renderOK(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) { s.TargetNamespace = tt.target }))
			assert.Equal(t, tt.want, keys(out.Objects))
		})
	}
}

func TestRenderManifestsIgnoresValues(t *testing.T) {
	// valuesFrom names objects that do not exist: plain manifests never read them.
	r := newTestRenderer(configMap("src", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: '{{ .Values.x }}'}\n"}))
	out := renderOK(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{
			Values:     raw(t, map[string]any{"x": "y"}),
			ValuesFrom: []convoyv1alpha1.ValuesReference{{Kind: "Secret", Name: "missing"}},
		}
	}))
	require.Len(t, out.Objects, 1)
	assert.Equal(t, map[string]any{"k": "{{ .Values.x }}"}, out.Objects[0].Object["data"])
}

func TestRenderManifestsKeepsTypes(t *testing.T) {
	r := newTestRenderer(configMap("src", map[string]string{"d.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  paused: false
  template:
    spec:
      terminationGracePeriodSeconds: 1.5
`}))
	out := renderOK(t, r, release("src"))
	u := out.Objects[0]
	assert.Equal(t, int64(3), u.Object["spec"].(map[string]any)["replicas"])
	assert.Equal(t, false, u.Object["spec"].(map[string]any)["paused"])
	// DeepCopy panics on types that unstructured does not allow.
	assert.NotPanics(t, func() { u.DeepCopy() })
}
