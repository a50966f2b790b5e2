package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	convoykustomize "github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// exampleOverlay is the directory of the kustomize example, which these
// tests build with kubectl kustomize too.
const exampleOverlay = "../../artifacts/examples/kustomize"

// readDir reads the files under dir, by relative path, prefixed with
// prefix.
func readDir(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := os.DirFS(dir)
	require.NoError(t, fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		files[prefix+p] = string(data)
		return err
	}))
	return files
}

// kubectlKustomize builds dir with the kubectl of the test binaries (its
// kustomize built in), and defaults the namespace of each object to
// namespace, as the render does for a Release whose target is namespace
// (every kind here is namespaced).
func kubectlKustomize(t *testing.T, dir, namespace string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := mustKubectl(t, "", "", "kustomize", dir)
	objs, err := manifest.ParseFile("kubectl kustomize", []byte(out))
	require.NoError(t, err)
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetNamespace() == "" {
			o.SetNamespace(namespace)
		}
		byKey[o.GetKind()+" "+o.GetName()] = o
	}
	return byKey
}

// assertSameAsKubectlKustomize compares the objects of a Release's
// /preview with those kubectl kustomize builds from dir, object by object;
// a Secret's values, which /preview redacts, are compared by key.
func assertSameAsKubectlKustomize(t *testing.T, namespace, name, dir string) {
	t.Helper()
	want := kubectlKustomize(t, dir, namespace)
	got := map[string]*unstructured.Unstructured{}
	for _, o := range previewObjects(t, preview(t, namespace, name, "")) {
		got[o.GetKind()+" "+o.GetName()] = o
	}
	require.Equal(t, keysOf(want), keysOf(got))
	for key, w := range want {
		g := got[key]
		if w.GetKind() == "Secret" {
			wantData, _, _ := unstructured.NestedStringMap(w.Object, "data")
			gotData, _, _ := unstructured.NestedStringMap(g.Object, "data")
			require.Equal(t, keysOf(wantData), keysOf(gotData), key)
			for k, v := range gotData {
				assert.True(t, strings.HasPrefix(v, "redacted:"), "%s: %s is redacted", key, k)
			}
			unstructured.RemoveNestedField(w.Object, "data")
			unstructured.RemoveNestedField(g.Object, "data")
		}
		assert.Equal(t, w.Object, g.Object, key)
	}
}

func keysOf[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// An overlay in an OCI bundle, under a path: the render holds what kubectl
// kustomize builds (hashed generator names and the references to them,
// prefix, labels, patches, a component, a replacement); the stand-in
// applies it and the Release is InSync; a new bundle whose overlay patch
// changes makes it Drifted (manual mode) until a sync.
func TestKustomizeOverlayFromABundle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	files := readDir(t, exampleOverlay, "deploy/podinfo/")
	files["deploy/other/kustomization.yaml"] = "resources:\n- https://example.com/never-read.yaml\n"
	first, err := reg.PushBundle(ctx, "bundles/podinfo", "v1", files)
	require.NoError(t, err)

	src := ociSource(reg.URL("bundles/podinfo"), "v1", "")
	src.OCIRepository.Path = "deploy/podinfo/overlays/prod"
	newSourceRelease(t, ns, "podinfo", src)
	standIn.apply(ns, "podinfo")
	waitInSync(t, ns, "podinfo", metav1.ConditionTrue, "InSync")
	assertSameAsKubectlKustomize(t, ns, "podinfo", filepath.Join(exampleOverlay, "overlays/prod"))
	assert.Equal(t, first, getDiff(t, ns, "podinfo", "").ResolvedSource.Digest)

	// The overlay's patch changes in a new bundle.
	changed := filepath.Join(t.TempDir(), "podinfo")
	require.NoError(t, os.CopyFS(changed, os.DirFS(exampleOverlay)))
	patch := filepath.Join(changed, "overlays/prod/deployment.yaml")
	data, err := os.ReadFile(patch)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(patch, []byte(strings.Replace(string(data), "replicas: 2", "replicas: 3", 1)), 0o644))
	second, err := reg.PushBundle(ctx, "bundles/podinfo", "v1", readDir(t, changed, "deploy/podinfo/"))
	require.NoError(t, err)
	cond := waitInSync(t, ns, "podinfo", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "Deployment.apps "+ns+"/prod-podinfo is Modified: spec.replicas")
	assert.Equal(t, second, getDiff(t, ns, "podinfo", "").ResolvedSource.Digest, "the new digest")
	assertSameAsKubectlKustomize(t, ns, "podinfo", filepath.Join(changed, "overlays/prod"))
	standIn.apply(ns, "podinfo")
	waitInSync(t, ns, "podinfo", metav1.ConditionTrue, "InSync")
}

// blockDocuments is a file of ConfigMaps, one per block scalar header:
// the block ends each document, then sits in the middle of one; the file
// ends in a block with no final line break.
func blockDocuments() string {
	var docs []string
	for i, hdr := range []string{"|", "|-", "|+", ">", ">-", ">+"} {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: end-%d}\ndata:\n  text: %s\n    line one\n     indented\n    line two\n\n", i, hdr),
			fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: middle-%d}\ndata:\n  text: %s\n    line one\n\n  after: x\n", i, hdr))
	}
	docs = append(docs, "# a comment-only document\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: last}\ndata:\n  text: |+\n    no line break")
	return strings.Join(docs, "---\n")
}

// A kustomization among a ConfigMap's keys (a flat directory) goes round
// the loop too, equal to kubectl kustomize of the same files, block
// scalars of every header and documents of several per file included.
func TestKustomizeFromAConfigMap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	files := map[string]string{
		"kustomization.yaml": "resources:\n- deploy.yaml\n- blocks.yaml\nnamePrefix: cm-\nconfigMapGenerator:\n- name: settings\n  literals: [color=blue]\n- name: conf\n  files: [app.conf]\nsecretGenerator:\n- name: token\n  literals: [token=abc]\npatches:\n- path: replicas.yaml\n",
		"blocks.yaml":        blockDocuments(),
		"app.conf":           "a = 1\n\n\n",
		"deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        envFrom:\n        - configMapRef: {name: settings}\n        - secretRef: {name: token}\n",
		"replicas.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n",
	}
	dir := t.TempDir()
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	_, err := kubeClient(t).CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "overlay"}, Data: files}, metav1.CreateOptions{})
	require.NoError(t, err)
	newSourceRelease(t, ns, "web", convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "overlay"}})
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	assertSameAsKubectlKustomize(t, ns, "web", dir)
}

// Hostile kustomizations are Undetermined with their reason, and the
// server they name on loopback gets no request; a path out of the bundle
// is refused by the CRD; a path that names nothing is PathNotFound.
func TestKustomizeRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"))
	}))
	t.Cleanup(srv.Close)
	reg := startTestRegistry(t, ociregistry.Options{})
	_, err := reg.PushBundle(ctx, "bundles/hostile", "v1", map[string]string{
		"remote/kustomization.yaml": "resources:\n- " + srv.URL + "/cm.yaml\n",
		"base/kustomization.yaml":   "resources:\n- github.com/example/app//base?ref=v1\n",
		"helm/kustomization.yaml":   "helmCharts:\n- name: podinfo\n  repo: " + srv.URL + "\n",
		"plugin/kustomization.yaml": "generators:\n- |-\n  apiVersion: example.com/v1\n  kind: Exec\n  metadata: {name: e}\n",
		"plain/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	})
	require.NoError(t, err)
	for _, tc := range []struct{ path, reason, message string }{
		{"remote", convoykustomize.ReasonKustomizeRemoteRefused, "is a URL, which kustomize would fetch over the network"},
		{"base", convoykustomize.ReasonKustomizeRemoteRefused, "kustomize would fetch it as a remote base"},
		{"helm", convoykustomize.ReasonKustomizePluginRefused, "inflates Helm charts"},
		{"plugin", convoykustomize.ReasonKustomizePluginRefused, "example.com/v1 Exec is a plugin"},
		{"missing", render.ReasonPathNotFound, "holds no directory missing"},
	} {
		src := ociSource(reg.URL("bundles/hostile"), "v1", "")
		src.OCIRepository.Path = tc.path
		newSourceRelease(t, ns, tc.path, src)
		assertSourceUndetermined(t, ns, tc.path, tc.reason, tc.message)
	}
	assert.Zero(t, requests.Load(), "no request reached the server the kustomizations name")

	// The server kept serving: a plain directory of the same bundle.
	src := ociSource(reg.URL("bundles/hostile"), "v1", "")
	src.OCIRepository.Path = "plain"
	newSourceRelease(t, ns, "plain", src)
	newStandIn(t).apply(ns, "plain")
	waitInSync(t, ns, "plain", metav1.ConditionTrue, "InSync")

	for _, path := range []string{"../etc", "/etc", "a/../../b"} {
		r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "escape", Namespace: ns}, Spec: convoyv1alpha1.ReleaseSpec{
			Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: reg.URL("bundles/hostile"), Tag: "v1", Path: path}}}}
		_, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Create(ctx, r, metav1.CreateOptions{})
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), "must be relative to the bundle's root", path)
	}
}
