package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

const testNS = "demo"

// testMapper knows a few built-in kinds and one custom kind; it does not
// know example.com/v1 Gadget.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "Secret"},
		{Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "example.com", Version: "v1", Kind: "Widget"},
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Namespace"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	} {
		m.Add(gvk, meta.RESTScopeRoot)
	}
	return m
}

// testEngine returns an Engine of its own (a Fetcher of the default
// Options, charts templated in process) within limits.
func testEngine(limits Limits) *Engine {
	return NewEngine(source.NewFetcher(source.Options{}), nil, limits)
}

// newTestRenderer returns a Renderer over a fake clientset holding objs.
func newTestRenderer(objs ...runtime.Object) *Renderer {
	return newRendererOn(fake.NewClientset(objs...), MapperScoper{Mapper: testMapper()})
}

// newRendererOn returns a Renderer of a testEngine of the default Limits
// that reads inputs with client and scopes with scoper.
func newRendererOn(client kubernetes.Interface, scoper Scoper) *Renderer {
	return testEngine(Limits{}).Renderer(source.ClientInputs{Client: client}, scoper)
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Data: data}
}

func chartConfigMap(name string, tgz []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		BinaryData: map[string][]byte{"chart.tgz": tgz},
	}
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// release returns a Release "app" in testNS whose source is ConfigMap source.
func release(source string, mutate ...func(*convoyv1alpha1.ReleaseSpec)) *convoyv1alpha1.Release {
	r := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "app"},
		Spec: convoyv1alpha1.ReleaseSpec{
			Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: source}},
		},
	}
	for _, m := range mutate {
		m(&r.Spec)
	}
	return r
}

// raw returns a RawExtension holding v as JSON.
func raw(t testing.TB, v any) *runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return &runtime.RawExtension{Raw: data}
}

// buildChart packs files (paths relative to the chart directory) into a
// chart archive under the directory name.
func buildChart(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for path, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{
			Name: name + "/" + path, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg,
		}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// renderOK renders rel and fails the test on an error.
func renderOK(t *testing.T, r *Renderer, rel *convoyv1alpha1.Release) *Render {
	t.Helper()
	out, err := r.Render(context.Background(), rel)
	require.NoError(t, err)
	require.Len(t, out.Ref, 16)
	return out
}

// renderErr renders rel, expects an *failure.Error with reason, and returns it.
func renderErr(t *testing.T, r *Renderer, rel *convoyv1alpha1.Release, reason string) *failure.Error {
	t.Helper()
	out, err := r.Render(context.Background(), rel)
	require.Error(t, err, "render: %v", out)
	var rerr *failure.Error
	require.ErrorAs(t, err, &rerr)
	require.Equal(t, reason, rerr.Reason, "message: %s", rerr.Message)
	t.Logf("%s: %s", rerr.Reason, rerr.Message)
	return rerr
}

// keys lists "apiVersion kind namespace/name" of each object, in order.
func keys(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, u := range objs {
		out[i] = describe(u)
	}
	return out
}

// find returns the object of kind and name.
func find(t *testing.T, r *Render, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range r.Objects {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s in render %v", kind, name, keys(r.Objects))
	return nil
}

// describe names an object with its apiVersion, "apps/v1 Deployment
// demo/web", where tests tell versions apart.
func describe(u *unstructured.Unstructured) string {
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return u.GetAPIVersion() + " " + u.GetKind() + " " + name
}
