//go:build helmconformance

// Built only with -tags helmconformance (make test's norace phase, make
// verify's vet): Helm's action package brings about 140 packages (a SQL
// driver, a WebAssembly runtime, controller-runtime, kubectl) that nothing
// else compiles, and the race detector's build of them would double their
// cost on a fresh machine (docs/contributors/performance.md).

package render

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// The conformance of convoy's chart render with Helm's own: each chart
// below is made in the test, templated by convoy (renderDirectory for the
// chart's directory, renderChart for the archive helm package makes of it)
// and by Helm's template action of the same module (action.Install, a
// client-only dry run with the options of helm template --no-hooks), and
// the objects are compared exactly, as JSON after decoding. Helm's objects
// are decoded as helm install decodes them: the release manifest with its
// kube client's builder (cli-runtime, ContinueOnError, Flatten,
// Unstructured), and each file of crds/ by itself with the same builder
// (installCRDs).
//
// What convoy keeps different on purpose (docs/users/directories.md, "Charts
// as Helm renders them"), and so this test does not compare:
//
//   - hooks: left out, as --no-hooks leaves them out (Helm's release
//     manifest holds none either, so they are compared by their absence);
//   - crds/: parsed as helm install parses them, each file as it is, not
//     as helm template --include-crds prints them (each followed by a
//     newline, which gives a block scalar that ends the file without a line
//     break one);
//   - .Capabilities.HelmVersion.Version: that of the released CLI of the
//     module's version (v4.3.1), where Helm in process says what its
//     sources say (v4.3) (helmVersionDiffers);
//   - the namespace rule (namespaces defaulted to the target namespace,
//     removed from cluster-scoped objects): it applies after the templating
//     both sides do here, and is not part of it;
//   - Helm's own labels and annotations (app.kubernetes.io/managed-by,
//     meta.helm.sh/release-name), which helm install adds to what it
//     creates after the templating: convoy's controller labels what it
//     applies itself.

const conformChart = "apiVersion: v2\nname: conform\nversion: 0.1.0\n"

// helmCase is a chart's directory, the values it is templated with, and,
// when the templating fails, the reason convoy gives (Helm must fail too).
type helmCase struct {
	name   string
	files  map[string]string
	values map[string]any
	reason string
}

// chompers are YAML's block scalar headers: literal and folded, clipped,
// stripped and kept.
var chompers = []string{"|", "|-", "|+", ">", ">-", ">+"}

// blockEnd is a ConfigMap whose last value is a block scalar with header
// hdr, the text of the template ending with tail after the block's last
// line.
func blockEnd(name, hdr, tail string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
		"\ndata:\n  first: one\n  text: " + hdr + "\n    line one\n    line two" + tail
}

// blockMiddle is a ConfigMap with a block scalar with header hdr before
// another key.
func blockMiddle(name, hdr string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
		"\ndata:\n  text: " + hdr + "\n    line one\n     indented\n\n    line two\n\n  after: x\n"
}

func helmCases() []helmCase {
	ends := map[string]string{"Chart.yaml": conformChart}
	middles := map[string]string{"Chart.yaml": conformChart}
	docs := map[string]string{"Chart.yaml": conformChart}
	for i, hdr := range chompers {
		n := string(rune('a' + i))
		// With no final newline, with one, with blank lines after.
		ends["templates/end-"+n+"-0.yaml"] = blockEnd("end-"+n+"-0", hdr, "")
		ends["templates/end-"+n+"-1.yaml"] = blockEnd("end-"+n+"-1", hdr, "\n")
		ends["templates/end-"+n+"-3.yaml"] = blockEnd("end-"+n+"-3", hdr, "\n\n\n")
		middles["templates/middle-"+n+".yaml"] = blockMiddle("middle-"+n, hdr)
		// A block scalar that ends a document followed by another in
		// the same template.
		docs["templates/docs-"+n+".yaml"] = blockEnd("docs-"+n+"-first", hdr, "\n\n") + "---\n" + blockEnd("docs-"+n+"-last", hdr, "")
	}
	return []helmCase{
		{name: "block scalars that end a document", files: ends},
		{name: "block scalars in the middle of a document", files: middles},
		{name: "block scalars before a separator", files: docs},
		{name: "several documents per template, empty and comment-only ones", files: map[string]string{
			"Chart.yaml": conformChart,
			"templates/many.yaml": "---\n# a comment only\n---\n\n---   \napiVersion: v1\nkind: ConfigMap\nmetadata: {name: many-a}\n" +
				"--- # a comment after the separator\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: many-b}\ndata:\n  k: |\n    v\n---\n---\n",
			"templates/empty.yaml":   "{{- if .Values.absent }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: never}\n{{- end }}\n",
			"templates/comment.yaml": "# nothing but a comment\n",
			"templates/crlf.yaml":    "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: crlf\r\ndata:\r\n  text: |\r\n    a\r\n    b\r\n---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata: {name: crlf-2}\r\n",
			"templates/json.json":    `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}, "data": {"n": "1.0"}}`,
			"templates/list.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: listed}}\n---\n" +
				"apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: typed-list-item}\n  data: {k: v}\n",
		}},
		{name: "--- inside strings", files: map[string]string{
			"Chart.yaml": conformChart,
			"templates/dashes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dashes}\ndata:\n" +
				"  quoted: \"a --- b\"\n  block: |\n    ---\n    not a separator\n    ---\n  plain: x---y\n  folded: >\n    --- a\n",
		}},
		{name: "crds", files: map[string]string{
			"Chart.yaml": conformChart,
			"crds/widgets.yaml": crdText("widgets", "Widget") + "---\n" + crdText("gadgets", "Gadget") +
				"      description: |\n        the last line of the file, with no line break",
			"crds/json.json":        `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.example.com"}}`,
			"templates/widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
		}},
		{name: "hooks, tests and NOTES.txt left out", files: map[string]string{
			"Chart.yaml":          conformChart,
			"templates/NOTES.txt": "Installed {{ .Release.Name }}.\napiVersion: v1\nkind: ConfigMap\n",
			"templates/hooks.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations: {\"helm.sh/hook\": pre-install}\n" +
				"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n  annotations: {\"helm.sh/hook\": test}\n" +
				"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unknown-hook\n  annotations: {\"helm.sh/hook\": no-such-hook}\n" +
				"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\n",
		}},
		{name: "a subchart and a library chart", values: map[string]any{"sub": map[string]any{"greeting": "hi"}}, files: map[string]string{
			"Chart.yaml":                    "apiVersion: v2\nname: conform\nversion: 0.1.0\ndependencies:\n- {name: sub, version: 0.1.0}\n- {name: lib, version: 0.1.0}\n- {name: off, version: 0.1.0, condition: off.enabled}\n",
			"values.yaml":                   "off: {enabled: false}\n",
			"templates/uses-lib.yaml":       `{{ include "lib.configmap" (dict "name" "from-lib" "text" "kept\n") }}`,
			"charts/sub/Chart.yaml":         "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
			"charts/sub/values.yaml":        "greeting: hello\n",
			"charts/sub/templates/sub.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub-{{ .Release.Name }}}\ndata:\n  greeting: {{ .Values.greeting }}\n  text: |+\n    sub\n\n",
			"charts/sub/crds/sub.yaml":      crdText("subs", "Sub"),
			"charts/lib/Chart.yaml":         "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
			"charts/lib/templates/_lib.tpl": "{{- define \"lib.configmap\" -}}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .name }}}\ndata:\n  text: {{ .text | toYaml | indent 4 | trim }}\n{{- end -}}\n",
			"charts/off/Chart.yaml":         "apiVersion: v2\nname: off\nversion: 0.1.0\n",
			"charts/off/templates/off.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: disabled}\n",
			"charts/off/crds/off.yaml":      crdText("offs", "Off"),
		}},
		{name: "tpl, required, lookup, .Files and .helmignore", values: map[string]any{"name": "given", "tmpl": "{{ .Release.Name }}-from-tpl"}, files: map[string]string{
			"Chart.yaml":             conformChart,
			".helmignore":            "ignored/\n*.skip\ntemplates/skipped.yaml\n",
			"files/a.conf":           "a = 1\n",
			"files/b.conf":           "b = 2",
			"files/c.skip":           "never read\n",
			"ignored/x.conf":         "never read\n",
			"templates/skipped.yaml": `{{ fail "an ignored template is templated" }}`,
			"templates/files.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"name is required\" .Values.name }}\ndata:\n" +
				"  tpl: {{ tpl .Values.tmpl . | quote }}\n" +
				"  a: {{ .Files.Get \"files/a.conf\" | quote }}\n" +
				"  skipped: {{ .Files.Get \"files/c.skip\" | quote }}\n" +
				"  ignored: {{ .Files.Get \"ignored/x.conf\" | quote }}\n" +
				"  lookup: {{ lookup \"v1\" \"ConfigMap\" .Release.Namespace \"any\" | toJson | quote }}\n" +
				"  raw: |\n{{ .Files.Get \"files/b.conf\" | indent 4 }}\n" +
				"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: globbed}\ndata:\n{{ (.Files.Glob \"files/*\").AsConfig | indent 2 }}\n" +
				"---\napiVersion: v1\nkind: Secret\nmetadata: {name: globbed}\ndata:\n{{ (.Files.Glob \"files/*.conf\").AsSecrets | indent 2 }}\n",
		}},
		{name: ".Capabilities and .Release", files: map[string]string{
			"Chart.yaml": conformChart,
			"templates/caps.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caps}\ndata:\n" +
				"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n" +
				"  kubeMinor: {{ .Capabilities.KubeVersion.Minor | quote }}\n" +
				"  apps: {{ .Capabilities.APIVersions.Has \"apps/v1\" | quote }}\n" +
				"  crds: {{ .Capabilities.APIVersions.Has \"apiextensions.k8s.io/v1\" | quote }}\n" +
				"  helm: {{ .Capabilities.HelmVersion.Version | quote }}\n" +
				"  helmKubeClient: {{ .Capabilities.HelmVersion.KubeClientVersion | quote }}\n" +
				"  release: {{ printf \"%s %s %d %t %t %s\" .Release.Name .Release.Namespace .Release.Revision .Release.IsInstall .Release.IsUpgrade .Release.Service | quote }}\n" +
				"  chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n",
		}},
		{name: "fail", reason: ReasonTemplateFailed, files: map[string]string{
			"Chart.yaml": conformChart, "templates/fail.yaml": `{{ fail "no" }}`,
		}},
		{name: "required, missing", reason: ReasonTemplateFailed, files: map[string]string{
			"Chart.yaml": conformChart, "templates/req.yaml": `name: {{ required "name is required" .Values.name }}`,
		}},
		{name: "a document that is not YAML", reason: ReasonManifestInvalid, files: map[string]string{
			"Chart.yaml": conformChart, "templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad\n",
		}},
		{name: "a file of crds/ with no object", reason: ReasonManifestInvalid, files: map[string]string{
			"Chart.yaml": conformChart, "crds/empty.yaml": "# nothing\n",
		}},
	}
}

// crdText is a CustomResourceDefinition of kind in example.com whose text
// ends inside its version's schema, so that a line may follow it.
func crdText(plural, kind string) string {
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + plural + ".example.com}\nspec:\n" +
		"  group: example.com\n  scope: Namespaced\n  names: {kind: " + kind + ", plural: " + plural + "}\n" +
		"  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n" +
		"        x-kubernetes-preserve-unknown-fields: true\n"
}

func TestChartConformsToHelm(t *testing.T) {
	for _, tc := range helmCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
			}
			rel := release("unused", func(s *convoyv1alpha1.ReleaseSpec) {
				if tc.values != nil {
					s.Content = &convoyv1alpha1.ReleaseContent{Values: raw(t, tc.values)}
				}
			})

			// helm template ./dir
			want, herr := helmTemplate(t, dir, tc.values)
			got, cerr := newTestRenderer().renderDirectory(context.Background(), rel, dirSource(tc.files, ""))
			compareWithHelm(t, tc, want, herr, got, cerr)

			// helm package ./dir; helm template conform-0.1.0.tgz
			ch, err := loader.Load(dir)
			require.NoError(t, err)
			tgzPath, err := chartutil.Save(ch, t.TempDir())
			require.NoError(t, err)
			tgz, err := os.ReadFile(tgzPath)
			require.NoError(t, err)
			want, herr = helmTemplate(t, tgzPath, tc.values)
			got, cerr = newTestRenderer().renderChart(context.Background(), rel, "chart.tgz", tgz)
			compareWithHelm(t, tc, want, herr, got, cerr)
		})
	}
}

// compareWithHelm compares convoy's objects (or failure) with Helm's.
func compareWithHelm(t *testing.T, tc helmCase, want []*unstructured.Unstructured, herr error, got []*unstructured.Unstructured, cerr *failure.Error) {
	t.Helper()
	if tc.reason != "" {
		require.Error(t, herr, "Helm templates it")
		require.NotNil(t, cerr, "convoy templates it: %v", keys(got))
		assert.Equal(t, tc.reason, cerr.Reason, cerr.Message)
		t.Logf("Helm: %v\nconvoy: %s", herr, cerr.Message)
		return
	}
	require.NoError(t, herr)
	require.Nil(t, cerr)
	require.NotEmpty(t, want)
	helmVersionDiffers(want)
	assert.Equal(t, asJSON(t, want), asJSON(t, got))
}

// helmVersionDiffers sets in Helm's objects the HelmVersion convoy gives on
// purpose: that of the released CLI, the version of the module, where
// Helm in process gives what its sources say (v4.3).
func helmVersionDiffers(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "caps" {
			_ = unstructured.SetNestedField(o.Object, HelmVersion, "data", "helm")
		}
	}
}

// helmTemplate templates the chart at path (a directory or an archive) as
// helm template --no-hooks does, and decodes the objects as helm install
// does.
func helmTemplate(t *testing.T, path string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ch, err := loader.Load(path)
	require.NoError(t, err)
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = "app"
	inst.Namespace = testNS
	inst.Replace = true
	inst.DisableHooks = true
	if values == nil {
		values = map[string]any{}
	}
	released, err := inst.RunWithContext(context.Background(), ch, values)
	if err != nil {
		return nil, err
	}
	r, ok := released.(*releasev1.Release)
	require.True(t, ok, "a %T", released)
	for _, h := range r.Hooks {
		require.NotContains(t, r.Manifest, h.Manifest, "hook %s in the manifest", h.Name)
	}
	objs, err := helmBuild(r.Manifest)
	if err != nil {
		return nil, err
	}
	for _, crd := range ch.CRDObjects() {
		got, err := helmBuild(string(crd.File.Data))
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, assert.AnError // installCRDs: "resources are empty"
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// helmBuild decodes a stream as Helm's kube client does (Client.Build),
// without a cluster.
func helmBuild(stream string) ([]*unstructured.Unstructured, error) {
	infos, err := resource.NewLocalBuilder().Unstructured().ContinueOnError().Flatten().
		Stream(strings.NewReader(stream), "manifest").Do().Infos()
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, 0, len(infos))
	for _, info := range infos {
		objs = append(objs, info.Object.(*unstructured.Unstructured))
	}
	return objs, nil
}

// asJSON gives each object as JSON, in the order of their keys.
func asJSON(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		data, err := json.Marshal(o.Object)
		require.NoError(t, err)
		out = append(out, describe(o)+" "+string(data))
	}
	slices.Sort(out)
	return out
}

// The cases hold each block scalar header.
func TestHelmCasesHoldEveryChomper(t *testing.T) {
	var all bytes.Buffer
	for _, tc := range helmCases() {
		for _, data := range tc.files {
			all.WriteString(data)
		}
	}
	for _, hdr := range chompers {
		assert.Contains(t, all.String(), "text: "+hdr+"\n", hdr)
	}
}
