package render

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// layersChart shows which layer of values each key came from: the chart's
// values.yaml, the values files, valuesFrom and the inline values.
func layersChart(extra map[string]string) map[string]string {
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: layers\nversion: 0.1.0\n",
		"values.yaml": `
k1: chart
k2: chart
k3: chart
k4: chart
nested: {keep: 1, drop: 2}
revived: chart
`,
		"templates/cm.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: layers}
data:
  k1: {{ .Values.k1 | quote }}
  k2: {{ .Values.k2 | quote }}
  k3: {{ .Values.k3 | quote }}
  k4: {{ .Values.k4 | quote }}
  keep: {{ .Values.nested.keep | quote }}
  hasDrop: {{ hasKey .Values.nested "drop" | quote }}
  revived: {{ .Values.revived | default "deleted" | quote }}
`,
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// chartForm is a chart as a source holds it: packaged, or a directory.
type chartForm struct {
	name   string
	source func(t *testing.T, files map[string]string) *source.Source
}

var chartForms = []chartForm{
	{"packaged", func(t *testing.T, files map[string]string) *source.Source {
		return &source.Source{Where: "oci://registry.example/charts/layers:1@sha256:0", Chart: buildChart(t, "layers", files)}
	}},
	{"directory", func(t *testing.T, files map[string]string) *source.Source {
		under := map[string]string{"README.md": "the repository's root"}
		for k, v := range files {
			under["charts/layers/"+k] = v
		}
		return dirSource(under, "charts/layers")
	}},
}

func renderSource(r *Renderer, rel *convoyv1alpha1.Release, src *source.Source) ([]*unstructured.Unstructured, *failure.Error) {
	return r.render(context.Background(), rel, src)
}

func withContent(c convoyv1alpha1.ReleaseContent) *convoyv1alpha1.Release {
	return release("unused", func(s *convoyv1alpha1.ReleaseSpec) { s.Content = &c })
}

// The order is the chart's values.yaml, then valuesFiles in order, then
// valuesFrom, then values, each merged deeply over the one before (helm
// template -f FILE... -f VALUESFROM... -f VALUES). A null deletes the
// chart's default, as it does with helm -f; a later layer's value replaces
// the null.
func TestValuesFilesOrder(t *testing.T) {
	files := layersChart(map[string]string{
		"values-prod.yaml":  "k1: prod\nk2: prod\nnested: {drop: null}\nrevived: null\n",
		"env/extra.yaml":    "k2: extra\nk3: extra\n",
		"values-other.yaml": "k1: never read\n",
	})
	r := newTestRenderer(configMap("vals", map[string]string{"values.yaml": "k3: configmap\nk4: configmap\n"}))
	for _, form := range chartForms {
		t.Run(form.name, func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				content convoyv1alpha1.ReleaseContent
				want    map[string]any
			}{{
				name: "every layer",
				content: convoyv1alpha1.ReleaseContent{
					ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}, {Path: "./env/extra.yaml"}, {Path: "absent.yaml", Optional: true}},
					ValuesFrom:  []convoyv1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "vals"}},
					Values:      raw(t, map[string]any{"k4": "inline", "revived": "inline"}),
				},
				want: map[string]any{"k1": "prod", "k2": "extra", "k3": "configmap", "k4": "inline", "keep": "1", "hasDrop": "false", "revived": "inline"},
			}, {
				name:    "a null deletes the chart's default",
				content: convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}}},
				want:    map[string]any{"k1": "prod", "k2": "prod", "k3": "chart", "k4": "chart", "keep": "1", "hasDrop": "false", "revived": "deleted"},
			}, {
				name:    "files in their order",
				content: convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "env/extra.yaml"}, {Path: "values-prod.yaml"}}},
				want:    map[string]any{"k1": "prod", "k2": "prod", "k3": "extra", "k4": "chart", "keep": "1", "hasDrop": "false", "revived": "deleted"},
			}, {
				name:    "no values files: the chart's defaults",
				content: convoyv1alpha1.ReleaseContent{},
				want:    map[string]any{"k1": "chart", "k2": "chart", "k3": "chart", "k4": "chart", "keep": "1", "hasDrop": "true", "revived": "chart"},
			}} {
				t.Run(tc.name, func(t *testing.T) {
					objs, err := renderSource(r, withContent(tc.content), form.source(t, files))
					require.Nil(t, err)
					require.Len(t, objs, 1)
					assert.Equal(t, tc.want, objs[0].Object["data"])
				})
			}
		})
	}
}

// A missing, escaping, oversized or broken values file fails the render
// with a reason and a message naming the file.
func TestValuesFilesErrors(t *testing.T) {
	files := layersChart(map[string]string{
		"values-prod.yaml": "k1: prod\n",
		"big.yaml":         "k1: " + strings.Repeat("x", 2048) + "\n",
		"list.yaml":        "- not\n- a map\n",
	})
	engine := testEngine(Limits{MaxValuesFileBytes: 1024})
	r := engine.Renderer(source.ClientInputs{}, MapperScoper{Mapper: testMapper()})
	for _, form := range chartForms {
		t.Run(form.name, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				file   convoyv1alpha1.ValuesFile
				reason string
				says   []string
			}{
				{"missing", convoyv1alpha1.ValuesFile{Path: "values-staging.yaml"}, ReasonValuesNotFound, []string{"valuesFiles 1:", "holds no file values-staging.yaml"}},
				{"parent", convoyv1alpha1.ValuesFile{Path: "../layers/values-prod.yaml"}, ReasonValuesInvalid, []string{"valuesFiles 1:", `"../layers/values-prod.yaml" has a .. element`}},
				{"parent optional", convoyv1alpha1.ValuesFile{Path: "../secret.yaml", Optional: true}, ReasonValuesInvalid, []string{".. element"}},
				{"absolute", convoyv1alpha1.ValuesFile{Path: "/etc/passwd"}, ReasonValuesInvalid, []string{`"/etc/passwd" is absolute`}},
				{"the directory", convoyv1alpha1.ValuesFile{Path: "./"}, ReasonValuesInvalid, []string{"names the chart's directory"}},
				{"oversized", convoyv1alpha1.ValuesFile{Path: "big.yaml"}, ReasonValuesFileTooLarge, []string{"valuesFiles 1: big.yaml of", "more than the limit of 1024 (--max-values-file-bytes)"}},
				{"not a map", convoyv1alpha1.ValuesFile{Path: "list.yaml"}, ReasonValuesInvalid, []string{"valuesFiles 1: list.yaml of", "is not a YAML map of values"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					rel := withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}, tc.file}})
					objs, err := renderSource(r, rel, form.source(t, files))
					require.NotNil(t, err, "objects: %v", keys(objs))
					assert.Equal(t, tc.reason, err.Reason, err.Message)
					for _, s := range tc.says {
						assert.Contains(t, err.Message, s)
					}
				})
			}
		})
	}
}

// A values file outside the chart's directory is refused even when the
// source holds it.
func TestValuesFilesStayInTheChartDirectory(t *testing.T) {
	under := map[string]string{"envs/prod.yaml": "k1: outside\n"}
	for k, v := range layersChart(nil) {
		under["charts/layers/"+k] = v
	}
	rel := withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "../../envs/prod.yaml"}}})
	_, err := renderSource(newTestRenderer(), rel, dirSource(under, "charts/layers"))
	require.NotNil(t, err)
	assert.Equal(t, ReasonValuesInvalid, err.Reason, err.Message)
}

// helm template DIR -f FILE reads FILE whatever .helmignore says; so does
// convoy.
func TestValuesFilesIgnoredByHelmignore(t *testing.T) {
	files := layersChart(map[string]string{".helmignore": "values-*.yaml\n", "values-prod.yaml": "k1: prod\n"})
	rel := withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}}})
	objs, err := renderSource(newTestRenderer(), rel, chartForms[1].source(t, files))
	require.Nil(t, err)
	assert.Equal(t, "prod", objs[0].Object["data"].(map[string]any)["k1"])
}

// Only charts read values: plain manifests and kustomizations do not read
// their valuesFiles, so a missing one does not fail them.
func TestValuesFilesOnlyCharts(t *testing.T) {
	src := dirSource(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n"}, "app")
	rel := withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "absent.yaml"}}})
	objs, err := renderSource(newTestRenderer(), rel, src)
	require.Nil(t, err)
	assert.Len(t, objs, 1)
}

// A chart directory is built once per content of its files and values: a
// values file that changes alone (same chart, same spec) builds again and
// renders the change; the build cache never serves the old one.
func TestValuesFilesChangeRendersAgain(t *testing.T) {
	engine := NewEngine(source.NewFetcher(source.Options{}), nil, Limits{}).WithBuildCache(DefaultBuildCacheBytes, time.Hour, clock.RealClock{})
	r := engine.Renderer(source.ClientInputs{}, MapperScoper{Mapper: testMapper()})
	rel := withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}}})
	for _, k1 := range []string{"blue", "green", "blue"} {
		objs, err := renderSource(r, rel, chartForms[1].source(t, layersChart(map[string]string{"values-prod.yaml": "k1: " + k1 + "\n"})))
		require.Nil(t, err)
		assert.Equal(t, k1, objs[0].Object["data"].(map[string]any)["k1"])
	}
}

func TestValuesFilePath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "values-prod.yaml", want: "values-prod.yaml"},
		{in: "./env//prod.yaml", want: "env/prod.yaml"},
		{in: "env/./prod.yaml", want: "env/prod.yaml"},
		{in: "", bad: true},
		{in: ".", bad: true},
		{in: "/values.yaml", bad: true},
		{in: "..", bad: true},
		{in: "../values.yaml", bad: true},
		{in: "env/../values.yaml", bad: true},
		{in: "env/..", bad: true},
	} {
		got, err := ValuesFilePath(tc.in)
		if tc.bad {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

// FuzzValuesFiles: whatever the path and the file, reading a values file
// never panics, never reads outside the chart's directory, and never parses
// a file past the limit.
func FuzzValuesFiles(f *testing.F) {
	f.Add("values-prod.yaml", "k1: prod\n")
	f.Add("../outside.yaml", "k1: x\n")
	f.Add("env/./../../x", "a: &a [*a]\n")
	f.Add("./", "")
	f.Add("a//b.yaml", "- list\n")
	const limit = 256
	r := testEngine(Limits{MaxValuesFileBytes: limit}).Renderer(source.ClientInputs{}, MapperScoper{Mapper: testMapper()})
	f.Fuzz(func(t *testing.T, p, content string) {
		var read []string
		files := func(name string) ([]byte, bool, *failure.Error) {
			read = append(read, name)
			return []byte(content), true, nil
		}
		vals, err := r.valuesFile("fuzz", 0, convoyv1alpha1.ValuesFile{Path: p}, files)
		for _, name := range read {
			joined := path.Join("chart", name)
			require.True(t, strings.HasPrefix(joined, "chart/"), "path %q read %q, outside the chart's directory", p, name)
		}
		if err != nil {
			require.Nil(t, vals)
			return
		}
		require.Len(t, read, 1)
		require.LessOrEqual(t, len(content), limit, "a file past the limit was parsed")
	})
}
