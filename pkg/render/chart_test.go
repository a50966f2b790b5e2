package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// testChartFiles is a small chart: a ConfigMap that shows the values and
// the release, a Deployment, a Widget with its CRD in crds/, a partial,
// NOTES.txt, and two hooks.
func testChartFiles() map[string]string {
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: mychart\nversion: 0.1.0\n",
		"values.yaml": `
replicas: 1
image: {repository: nginx, tag: "1.0"}
shared: chart
onlyChart: c
`,
		"templates/_helpers.tpl": `{{- define "mychart.labels" -}}app: {{ .Release.Name }}{{- end -}}`,
		"templates/NOTES.txt":    "Installed {{ .Release.Name }}.\n",
		"templates/config.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    {{- include "mychart.labels" . | nindent 4 }}
data:
  releaseNamespace: {{ .Release.Namespace | quote }}
  isInstall: {{ .Release.IsInstall | quote }}
  shared: {{ .Values.shared | quote }}
  onlyChart: {{ .Values.onlyChart | quote }}
  onlyConfigMap: {{ .Values.onlyConfigMap | default "" | quote }}
  onlySecret: {{ .Values.onlySecret | default "" | quote }}
  image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
		"templates/deployment.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
		"templates/widget.yaml": `
apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec: {size: 1}
`,
		"templates/hooks.yaml": `
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations: {"helm.sh/hook": pre-install}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {"helm.sh/hook": test}
spec: {containers: [{name: t, image: busybox}]}
`,
		"crds/widgets.yaml": `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`,
	}
}

func withFiles(base map[string]string, changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func TestRenderChart(t *testing.T) {
	tgz := buildChart(t, "mychart", testChartFiles())
	r := newTestRenderer(
		chartConfigMap("src", tgz),
		configMap("vals", map[string]string{"values.yaml": "shared: configmap\nonlyConfigMap: cm\nimage: {tag: \"2.0\"}\n"}),
		secret("creds", map[string]string{"custom.yaml": "shared: secret\nonlySecret: s\n"}),
	)
	rel := release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.TargetNamespace = "prod"
		s.Content = &convoyv1alpha1.ReleaseContent{
			ValuesFrom: []convoyv1alpha1.ValuesReference{
				{Kind: "ConfigMap", Name: "vals"}, // key defaults to values.yaml
				{Kind: "ConfigMap", Name: "absent", Optional: true},
				{Kind: "Secret", Name: "creds", Key: "custom.yaml"},
				{Kind: "Secret", Name: "creds", Key: "absent.yaml", Optional: true},
			},
			Values: raw(t, map[string]any{"shared": "inline", "replicas": 3}),
		}
	})
	out := renderOK(t, r, rel)

	assert.Equal(t, []string{
		"v1 ConfigMap prod/app-config",
		"apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com",
		"apps/v1 Deployment prod/app-web",
		"example.com/v1 Widget prod/app-widget",
	}, keys(out.Objects), "hooks and NOTES.txt left out, crds/ included")

	cm := find(t, out, "ConfigMap", "app-config")
	assert.Equal(t, map[string]any{
		"releaseNamespace": "prod",
		"isInstall":        "true",
		"shared":           "inline",
		"onlyChart":        "c",
		"onlyConfigMap":    "cm",
		"onlySecret":       "s",
		"image":            "nginx:2.0",
	}, cm.Object["data"])
	assert.Equal(t, map[string]string{"app": "app"}, cm.GetLabels())

	replicas, _, _ := unstructured.NestedInt64(find(t, out, "Deployment", "app-web").Object, "spec", "replicas")
	assert.Equal(t, int64(3), replicas)
}

func TestRenderChartDefaultsAndDependencies(t *testing.T) {
	files := withFiles(testChartFiles(), map[string]string{
		"Chart.yaml": `
apiVersion: v2
name: mychart
version: 0.1.0
dependencies:
- {name: sub, version: 0.1.0, condition: sub.enabled}
`,
		"charts/sub/Chart.yaml":           "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.yaml":          "greeting: hello\n",
		"charts/sub/templates/hello.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub-hello}\ndata: {greeting: {{ .Values.greeting }}}\n",
		"charts/sub/crds/gadgets.yaml":    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Gadget, plural: gadgets}}\n",
	})
	r := newTestRenderer(chartConfigMap("src", buildChart(t, "mychart", files)))

	// No values: the chart's own, namespace of the Release.
	out := renderOK(t, r, release("src"))
	assert.Equal(t, "demo", find(t, out, "ConfigMap", "app-config").Object["data"].(map[string]any)["releaseNamespace"])
	assert.Equal(t, "hello", find(t, out, "ConfigMap", "sub-hello").Object["data"].(map[string]any)["greeting"])
	find(t, out, "CustomResourceDefinition", "gadgets.example.com")

	// Disabled through its condition: neither its templates nor its CRDs.
	out = renderOK(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{Values: raw(t, map[string]any{"sub": map[string]any{"enabled": false}})}
	}))
	for _, u := range out.Objects {
		assert.NotEqual(t, "sub-hello", u.GetName())
		assert.NotEqual(t, "gadgets.example.com", u.GetName())
	}
}

func TestRenderChartSchema(t *testing.T) {
	files := withFiles(testChartFiles(), map[string]string{
		"values.schema.json": `{
  "type": "object",
  "properties": {
    "replicas": {"type": "integer", "minimum": 1},
    "image": {"$ref": "https://schemas.invalid/image.json"}
  }
}`,
	})
	r := newTestRenderer(chartConfigMap("src", buildChart(t, "mychart", files)))

	// The remote $ref is not fetched (there is no network here): it stands for true.
	renderOK(t, r, release("src"))

	rerr := renderErr(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{Values: raw(t, map[string]any{"replicas": 0})}
	}), ReasonValuesInvalid)
	assert.Contains(t, rerr.Message, "schema of chart mychart")
	assert.Contains(t, rerr.Message, "replicas")
}

func TestRenderChartErrors(t *testing.T) {
	tests := []struct {
		name    string
		tgz     func(t *testing.T) []byte
		reason  string
		message []string
	}{
		{
			name:    "not a gzip archive",
			tgz:     func(*testing.T) []byte { return []byte("not a chart") },
			reason:  ReasonChartInvalid,
			message: []string{"ConfigMap demo/src binaryData chart.tgz is not a Helm chart"},
		},
		{
			name: "no Chart.yaml",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "mychart", map[string]string{"templates/a.yaml": "a: b\n"})
			},
			reason:  ReasonChartInvalid,
			message: []string{"is not a Helm chart", "Chart.yaml"},
		},
		{
			name: "library chart",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "lib", map[string]string{"Chart.yaml": "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n"})
			},
			reason:  ReasonChartInvalid,
			message: []string{"chart lib is a library chart"},
		},
		{
			name: "kubeVersion out of range",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "old", map[string]string{"Chart.yaml": "apiVersion: v2\nname: old\nversion: 0.1.0\nkubeVersion: '< 1.0.0'\n"})
			},
			reason:  ReasonChartInvalid,
			message: []string{"requires kubeVersion < 1.0.0"},
		},
		{
			name: "template execution error names the file",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "mychart", withFiles(testChartFiles(), map[string]string{
					"templates/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {x: {{ required \"value missing is required\" .Values.missing }}}\n",
				}))
			},
			reason:  ReasonTemplateFailed,
			message: []string{"mychart/templates/broken.yaml", "value missing is required"},
		},
		{
			name: "template parse error names the file",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "mychart", withFiles(testChartFiles(), map[string]string{
					"templates/unclosed.yaml": "data: {{ .Values.x \n",
				}))
			},
			reason:  ReasonTemplateFailed,
			message: []string{"mychart/templates/unclosed.yaml"},
		},
		{
			name: "rendered YAML that does not parse names the file",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "mychart", withFiles(testChartFiles(), map[string]string{
					"templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
				}))
			},
			reason:  ReasonManifestInvalid,
			message: []string{"mychart/templates/bad.yaml"},
		},
		{
			name: "rendered object without a name names the file",
			tgz: func(t *testing.T) []byte {
				return buildChart(t, "mychart", withFiles(testChartFiles(), map[string]string{
					"templates/noname.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n",
				}))
			},
			reason:  ReasonManifestInvalid,
			message: []string{"chart template mychart/templates/noname.yaml", "v1 ConfigMap has no metadata.name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRenderer(chartConfigMap("src", tt.tgz(t)))
			rerr := renderErr(t, r, release("src"), tt.reason)
			for _, m := range tt.message {
				assert.Contains(t, rerr.Message, m)
			}
		})
	}
}

func TestRenderChartIgnoresData(t *testing.T) {
	cm := chartConfigMap("src", buildChart(t, "mychart", testChartFiles()))
	cm.Data = map[string]string{"extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-rendered}\n"}
	out := renderOK(t, newTestRenderer(cm), release("src"))
	for _, u := range out.Objects {
		require.NotEqual(t, "not-rendered", u.GetName())
	}
}
