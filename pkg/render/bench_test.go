package render

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// chart200 renders 200 objects: 100 ConfigMaps, 50 Deployments, 50 Services.
func chart200(b *testing.B) *Renderer {
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: big\nversion: 0.1.0\n",
		// Read only by BenchmarkRenderChart200ValuesFile.
		"values-prod.yaml": "replicas: 3\n",
		"values.yaml":      "image: nginx:1\nreplicas: 2\n",
		"templates/_helpers.tpl": `{{- define "big.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}`,
		"templates/configmaps.yaml": `{{- range $i := until 100 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-cm-{{ $i }}
  labels: {{- include "big.labels" $ | nindent 4 }}
data:
  index: {{ $i | quote }}
  config.yaml: |
    key: value-{{ $i }}
    list: [a, b, c]
{{- end }}`,
		"templates/deployments.yaml": `{{- range $i := until 50 }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-web-{{ $i }}
  labels: {{- include "big.labels" $ | nindent 4 }}
spec:
  replicas: {{ $.Values.replicas }}
  selector:
    matchLabels: {app: web-{{ $i }}}
  template:
    metadata:
      labels: {app: web-{{ $i }}}
    spec:
      containers:
      - name: web
        image: {{ $.Values.image }}
        ports: [{containerPort: 8080, name: http}]
        resources: {requests: {cpu: 100m, memory: 128Mi}}
        env:
        - {name: INDEX, value: {{ $i | quote }}}
{{- end }}`,
		"templates/services.yaml": `{{- range $i := until 50 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $.Release.Name }}-web-{{ $i }}
  labels: {{- include "big.labels" $ | nindent 4 }}
spec:
  selector: {app: web-{{ $i }}}
  ports: [{port: 80, targetPort: http}]
{{- end }}`,
	}
	return newTestRenderer(chartConfigMap("src", buildChart(b, "big", files)))
}

func benchmarkRender(b *testing.B, rel *convoyv1alpha1.Release) {
	r := chart200(b)
	ctx := context.Background()
	out, err := r.Render(ctx, rel)
	if err != nil {
		b.Fatal(err)
	}
	if len(out.Objects) != 200 {
		b.Fatalf("rendered %d objects, want 200", len(out.Objects))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(ctx, rel); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderChart200 renders a chart of 200 objects: read the source,
// load the chart, coalesce values, run the templates, parse, default the
// namespaces, sort and hash.
func BenchmarkRenderChart200(b *testing.B) {
	benchmarkRender(b, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{Values: raw(b, map[string]any{"replicas": 3})}
	}))
}

// BenchmarkRenderChart200ValuesFile renders the same as
// BenchmarkRenderChart200, its values from the chart's own values-prod.yaml
// (spec.content.valuesFiles) instead of inline: the cost of reading the
// packaged chart's files in the server's process.
func BenchmarkRenderChart200ValuesFile(b *testing.B) {
	benchmarkRender(b, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}}}
	}))
}

// BenchmarkRenderChart200Mutated adds a label on all 200 objects and a
// strategic merge patch on the 50 Deployments.
func BenchmarkRenderChart200Mutated(b *testing.B) {
	benchmarkRender(b, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Mutations = []convoyv1alpha1.Mutation{
			{Labels: map[string]string{"team": "a"}},
			{
				Target: convoyv1alpha1.MutationTarget{Kind: "Deployment"},
				Patch:  rawJSON(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`),
			},
		}
	}))
}

// overlay200 is an overlay of 200 objects (100 ConfigMaps, 50 Deployments,
// 50 Services in a base) with a prefix, a label and a patch on every
// Deployment, in a bundle beside 50 other apps' directories.
func overlay200() map[string]string {
	files := map[string]string{}
	var base strings.Builder
	base.WriteString("resources:\n")
	for i := range 100 {
		name := fmt.Sprintf("cm-%d.yaml", i)
		files["apps/web/base/"+name] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  index: %q\n", i, fmt.Sprint(i))
		base.WriteString("- " + name + "\n")
	}
	for i := range 50 {
		name := fmt.Sprintf("web-%d.yaml", i)
		files["apps/web/base/"+name] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%[1]d}
spec:
  replicas: 1
  selector: {matchLabels: {app: web-%[1]d}}
  template:
    metadata: {labels: {app: web-%[1]d}}
    spec:
      containers:
      - {name: web, image: nginx:1, ports: [{containerPort: 8080, name: http}]}
---
apiVersion: v1
kind: Service
metadata: {name: web-%[1]d}
spec:
  selector: {app: web-%[1]d}
  ports: [{port: 80, targetPort: http}]
`, i)
		base.WriteString("- " + name + "\n")
	}
	files["apps/web/base/kustomization.yaml"] = base.String()
	files["apps/web/overlays/prod/kustomization.yaml"] = `resources: [../../base]
namePrefix: prod-
labels: [{pairs: {env: prod}}]
patches:
- target: {kind: Deployment}
  patch: |-
    - {op: replace, path: /spec/replicas, value: 3}
`
	for i := range 50 {
		files[fmt.Sprintf("apps/other-%d/cm.yaml", i)] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"
	}
	return files
}

// BenchmarkRenderKustomization builds an overlay of 200 objects in
// process ("build"), and takes it from the build cache after a change
// elsewhere in the bundle ("cached": the render reads and hashes the
// files, then decodes the kept JSON).
func BenchmarkRenderKustomization(b *testing.B) {
	files := overlay200()
	for _, tc := range []struct {
		name  string
		cache bool
	}{{"build", false}, {"cached", true}} {
		b.Run(tc.name, func(b *testing.B) {
			engine := NewEngine(source.NewFetcher(source.Options{}), nil, Limits{})
			if tc.cache {
				engine = engine.WithBuildCache(DefaultBuildCacheBytes, time.Hour, clock.RealClock{})
			}
			r := engine.Renderer(nil, MapperScoper{Mapper: testMapper()})
			src := dirSource(files, "apps/web/overlays/prod")
			other := slices.IndexFunc(src.Files, func(f source.File) bool { return f.Name == "apps/other-0/cm.yaml" })
			// The cache holds the build before the first round measured.
			if _, err := r.renderDirectory(context.Background(), release("unused"), src); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				src.Files[other].Data = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other-%d}\n", i)
				objs, err := r.renderDirectory(context.Background(), release("unused"), src)
				if err != nil || len(objs) != 200 {
					b.Fatalf("%d objects: %v", len(objs), err)
				}
			}
		})
	}
}
