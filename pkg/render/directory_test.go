package render

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

const bundleWhere = "oci://registry.example/app:v1@sha256:0"

// dirSource is a source of files (a bundle) holding files, rendered at dir.
func dirSource(files map[string]string, dir string) *source.Source {
	src := &source.Source{Where: bundleWhere, Path: dir}
	for name, data := range files {
		src.Files = append(src.Files, source.File{Name: name, Where: bundleWhere + " file " + name, Data: []byte(data)})
	}
	// A bundle's files come in path order.
	slices.SortFunc(src.Files, func(a, b source.File) int { return strings.Compare(a.Name, b.Name) })
	return src
}

// exampleFiles reads artifacts/examples/kustomize, the overlay the e2e
// tests compare with kubectl kustomize.
func exampleFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := os.DirFS("../../artifacts/examples/kustomize")
	require.NoError(t, fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		files[p] = string(data)
		return err
	}))
	return files
}

// renderDir renders src for the Release "app" of testNS, in process.
func renderDir(t *testing.T, r *Renderer, src *source.Source) ([]*unstructured.Unstructured, *failure.Error) {
	t.Helper()
	return r.renderDirectory(context.Background(), release("unused"), src)
}

func dirErr(t *testing.T, r *Renderer, src *source.Source, reason string) *failure.Error {
	t.Helper()
	objs, err := renderDir(t, r, src)
	require.NotNil(t, err, "objects: %v", keys(objs))
	require.Equal(t, reason, err.Reason, err.Message)
	return err
}

// Plain files: the YAML and JSON files under the path, recursively, in path
// order; other files and files elsewhere are not read.
func TestRenderDirectoryOfFiles(t *testing.T) {
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	src := dirSource(map[string]string{
		"apps/web/b.yaml":          cm("b"),
		"apps/web/a/z.yml":         cm("az"),
		"apps/web/a.json":          `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ajson"}}`,
		"apps/web/README.md":       "not a manifest",
		"apps/webber/c.yaml":       cm("elsewhere"),
		"apps/other/broken.yaml":   "{",
		"apps/web/notes/.keep.txt": "",
	}, "apps/web")
	objs, err := renderDir(t, newTestRenderer(), src)
	require.Nil(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	// "a.json" < "a/z.yml" < "b.yaml": byte order of the paths.
	assert.Equal(t, []string{"ajson", "az", "b"}, names)

	// The root renders every manifest of the source: here, a broken one.
	rerr := dirErr(t, newTestRenderer(), dirSource(map[string]string{"a.yaml": cm("a"), "x/broken.yaml": "{"}, ""), ReasonManifestInvalid)
	assert.Contains(t, rerr.Message, bundleWhere+" file x/broken.yaml")
}

func TestRenderDirectoryErrors(t *testing.T) {
	r := newTestRenderer()
	rerr := dirErr(t, r, dirSource(map[string]string{"apps/web/a.yaml": "kind: X"}, "apps/api"), ReasonPathNotFound)
	assert.Equal(t, bundleWhere+" holds no directory apps/api", rerr.Message)
	// A file is not a directory.
	dirErr(t, r, dirSource(map[string]string{"apps/web/a.yaml": "kind: X"}, "apps/web/a.yaml"), ReasonPathNotFound)
	rerr = dirErr(t, r, dirSource(map[string]string{"docs/README.md": "# hello"}, "docs"), sourcefailure.ReasonArtifactUnsupported)
	assert.Equal(t, bundleWhere+" path docs holds no kustomization, no Chart.yaml and no file ending .yaml, .yml or .json", rerr.Message)
}

// The example overlay: base, component, generators with hashed names and
// the references to them, prefix, labels, patches, a replacement.
func TestRenderDirectoryKustomization(t *testing.T) {
	files := exampleFiles(t)
	// A directory of another app beside it, which the build never reads.
	files["other/kustomization.yaml"] = "resources:\n- https://example.com/x.yaml\n"
	objs, err := renderDir(t, newTestRenderer(), dirSource(files, "overlays/prod"))
	require.Nil(t, err)
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = o
		assert.Equal(t, "prod", o.GetLabels()["env"], o.GetName())
	}
	require.Len(t, byKind, 4, keys(objs))
	settings, creds := byKind["ConfigMap"].GetName(), byKind["Secret"].GetName()
	assert.Regexp(t, `^prod-settings-[a-z0-9]{10}$`, settings)
	assert.Regexp(t, `^prod-credentials-[a-z0-9]{10}$`, creds)
	deploy := byKind["Deployment"]
	assert.Equal(t, "prod-podinfo", deploy.GetName())
	replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	assert.EqualValues(t, 2, replicas)
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	c := containers[0].(map[string]any)
	assert.Equal(t, []any{
		map[string]any{"configMapRef": map[string]any{"name": settings}},
		map[string]any{"secretRef": map[string]any{"name": creds}},
	}, c["envFrom"])
	assert.NotNil(t, c["readinessProbe"], "the component's patch")
	svc := byKind["Service"]
	assert.Equal(t, map[string]string{"convoy.kumodo.io/example": "kustomize", "image": "ghcr.io/stefanprodan/podinfo:6.7.1"}, svc.GetAnnotations())
}

// A kustomization from a ConfigMap's keys (a flat directory) goes through
// the whole render: namespaces, mutations.
func TestRenderConfigMapKustomization(t *testing.T) {
	r := newTestRenderer(configMap("src", map[string]string{
		"kustomization.yaml": "resources:\n- deploy.yaml\nnameSuffix: -v2\nconfigMapGenerator:\n- name: cfg\n  literals: [a=b]\n",
		"deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
		"notes.txt":          "a file the kustomization does not name",
	}))
	out := renderOK(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Mutations = []convoyv1alpha1.Mutation{{Labels: map[string]string{"team": "a"}}}
	}))
	deploy := find(t, out, "Deployment", "web-v2")
	assert.Equal(t, testNS, deploy.GetNamespace())
	assert.Equal(t, "a", deploy.GetLabels()["team"])
	require.Len(t, out.Objects, 2)
}

// A refusal of the walk comes before the build: a kustomization that names
// a URL of a server on loopback makes no request to it, whatever the
// Runner (pkg/sandbox's tests: in the Sandbox too).
func TestRenderDirectoryRefusesBeforeBuilding(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"))
	}))
	t.Cleanup(srv.Close)
	src := dirSource(map[string]string{"app/kustomization.yaml": "resources:\n- " + srv.URL + "/cm.yaml\n"}, "app")
	rerr := dirErr(t, newTestRenderer(), src, kustomize.ReasonKustomizeRemoteRefused)
	assert.Contains(t, rerr.Message, bundleWhere+" path app: app/kustomization.yaml: resources")
	assert.Zero(t, requests.Load())
}

// A kustomization that names a base the source holds as a link is
// refused with LinkUnsupported (it was KustomizeRemoteRefused, as if the
// base were a remote one).
func TestRenderDirectoryKustomizationOfALink(t *testing.T) {
	src := dirSource(map[string]string{"app/kustomization.yaml": "resources:\n- ../base\n", "real/cm.yaml": "kind: ConfigMap"}, "app")
	src.Links = []string{"base"}
	rerr := dirErr(t, newTestRenderer(), src, failure.ReasonLinkUnsupported)
	assert.Contains(t, rerr.Message, `resources "../base" names a link of the source (base)`)
}

// A chart's directory: its dependencies vendored in charts/, .helmignore
// honoured, values applied.
func TestRenderDirectoryChart(t *testing.T) {
	files := map[string]string{}
	for name, data := range testChartFiles() {
		files["charts/mychart/"+name] = data
	}
	files["charts/mychart/.helmignore"] = "templates/ignored.yaml\n"
	files["charts/mychart/templates/ignored.yaml"] = "{{ fail \"ignored\" }}"
	r := newTestRenderer()
	objs, err := r.renderDirectory(context.Background(), release("unused", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{Values: raw(t, map[string]any{"shared": "inline"})}
	}), dirSource(files, "charts/mychart"))
	require.Nil(t, err)
	var cfg *unstructured.Unstructured
	for _, o := range objs {
		if o.GetName() == "app-config" {
			cfg = o
		}
	}
	require.NotNil(t, cfg, keys(objs))
	shared, _, _ := unstructured.NestedString(cfg.Object, "data", "shared")
	assert.Equal(t, "inline", shared)
}

// countingRunner counts the builds that reach it.
type countingRunner struct {
	InProcess
	builds, templates atomic.Int32
}

func (c *countingRunner) Build(ctx context.Context, req KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error) {
	c.builds.Add(1)
	return c.InProcess.Build(ctx, req)
}

func (c *countingRunner) Template(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error) {
	c.templates.Add(1)
	return c.InProcess.Template(ctx, req)
}

// A build is kept by the content of the files it can read: a change
// elsewhere in the source builds nothing again, a change in a base does.
func TestRenderDirectoryBuildCache(t *testing.T) {
	runner := &countingRunner{}
	engine := NewEngine(source.NewFetcher(source.Options{}), runner, Limits{}).WithBuildCache(DefaultBuildCacheBytes, time.Hour, clock.RealClock{})
	r := engine.Renderer(nil, MapperScoper{Mapper: testMapper()})
	files := exampleFiles(t)
	files["apps/other/a.yaml"] = "kind: X"
	first, err := renderDir(t, r, dirSource(files, "overlays/prod"))
	require.Nil(t, err)

	files["apps/other/a.yaml"] = "kind: Y"
	files["overlays/staging/kustomization.yaml"] = "resources: [../../base]\n"
	again, err := renderDir(t, r, dirSource(files, "overlays/prod"))
	require.Nil(t, err)
	assert.Equal(t, first, again)
	assert.EqualValues(t, 1, runner.builds.Load(), "a change outside the overlay's directories builds nothing again")

	files["base/service.yaml"] = strings.Replace(files["base/service.yaml"], "port: 9898", "port: 80", 1)
	changed, err := renderDir(t, r, dirSource(files, "overlays/prod"))
	require.Nil(t, err)
	assert.EqualValues(t, 2, runner.builds.Load(), "a change in the base builds again")
	assert.NotEqual(t, first, changed)

	// A chart directory is kept with the values it was templated with.
	chart := map[string]string{}
	for name, data := range testChartFiles() {
		chart["chart/"+name] = data
	}
	for range 2 {
		_, err = renderDir(t, r, dirSource(chart, "chart"))
		require.Nil(t, err)
	}
	assert.EqualValues(t, 1, runner.templates.Load())
	_, err = r.renderDirectory(context.Background(), release("unused", func(s *convoyv1alpha1.ReleaseSpec) {
		s.Content = &convoyv1alpha1.ReleaseContent{Values: raw(t, map[string]any{"shared": "other"})}
	}), dirSource(chart, "chart"))
	require.Nil(t, err)
	assert.EqualValues(t, 2, runner.templates.Load())
}
