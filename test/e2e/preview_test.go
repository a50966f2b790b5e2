//go:build unix

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

const configMapManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: %s
`

const deploymentManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.example/web:%s
`

// setManifests creates or replaces the source ConfigMap <release>-manifests.
func setManifests(t *testing.T, namespace, release string, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: release + "-manifests", Namespace: namespace}, Data: files}
	_, err := kubeClient(t).CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		_, err = kubeClient(t).CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

// webManifests are the files of a small app: a ConfigMap and a Deployment.
func webManifests(color, version string) map[string]string {
	return map[string]string{
		"config.yaml":     fmt.Sprintf(configMapManifest, color),
		"deployment.yaml": fmt.Sprintf(deploymentManifest, version),
	}
}

func previewPath(namespace, name string) string {
	return fmt.Sprintf("%s/namespaces/%s/releases/%s/preview", subresourcesAPI, namespace, name)
}

// preview GETs /preview as the admin and decodes it.
func preview(t *testing.T, namespace, name, query string) subresourcesv1alpha1.ReleasePreview {
	t.Helper()
	out := mustKubectl(t, "", "", "get", "--raw", previewPath(namespace, name)+query)
	var p subresourcesv1alpha1.ReleasePreview
	require.NoError(t, json.Unmarshal([]byte(out), &p), out)
	return p
}

func previewObjects(t *testing.T, p subresourcesv1alpha1.ReleasePreview) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, raw := range p.Objects {
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(raw.Raw))
		objs = append(objs, u)
	}
	return objs
}

func TestPreviewFreshRender(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	newRelease(t, ns, "web")

	p := preview(t, ns, "web", "")
	assert.Equal(t, "ReleasePreview", p.Kind)
	assert.Equal(t, subresourcesv1alpha1.RenderSourceFresh, p.RenderSource)
	assert.Equal(t, newStandIn(t).render(ns, "web").Ref, p.RenderRef, "the same render the controller makes")

	objs := previewObjects(t, p)
	require.Len(t, objs, 2)
	assert.Equal(t, "ConfigMap", objs[0].GetKind(), "sorted by group, kind, namespace, name")
	assert.Equal(t, "Deployment", objs[1].GetKind())
	for _, o := range objs {
		assert.Equal(t, ns, o.GetNamespace(), "namespaced objects get the Release namespace")
	}
	color, _, _ := unstructured.NestedString(objs[0].Object, "data", "color")
	assert.Equal(t, "blue", color)

	table := mustKubectl(t, "", "", "get", "--raw", previewPath(ns, "web"))
	assert.Contains(t, table, p.RenderRef)
}

func TestPreviewPinnedRender(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	newRelease(t, ns, "web")
	standIn := newStandIn(t)
	applied := standIn.apply(ns, "web")

	setManifests(t, ns, "web", webManifests("green", "2.0"))
	fresh := standIn.render(ns, "web")
	require.NotEqual(t, applied.Ref, fresh.Ref)

	pin(t, ns, "web", applied.Ref)
	p := preview(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.RenderSourcePinned, p.RenderSource)
	assert.Equal(t, applied.Ref, p.RenderRef)
	color, _, _ := unstructured.NestedString(previewObjects(t, p)[0].Object, "data", "color")
	assert.Equal(t, "blue", color, "the pinned render, not the current source")

	pin(t, ns, "web", "00000000deadbeef")
	p = preview(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.RenderSourceFresh, p.RenderSource, "a pin to a render that is not stored")
	assert.Equal(t, fresh.Ref, p.RenderRef)
}

func TestPreviewRolledBackRelease(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	newRelease(t, ns, "web")
	standIn := newStandIn(t)
	healthy := standIn.apply(ns, "web")
	setManifests(t, ns, "web", webManifests("red", "2.0-broken"))
	broken := standIn.apply(ns, "web")

	standIn.rollBack(ns, "web", healthy.Ref)
	p := preview(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.RenderSourceLastHealthy, p.RenderSource)
	assert.Equal(t, healthy.Ref, p.RenderRef)

	standIn.rollBack(ns, "web", "00000000deadbeef")
	p = preview(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.RenderSourceFresh, p.RenderSource, "the last healthy render is not stored")
	assert.Equal(t, broken.Ref, p.RenderRef)
}

func TestPreviewStoredRender(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	newRelease(t, ns, "web")
	standIn := newStandIn(t)
	old := standIn.apply(ns, "web")
	setManifests(t, ns, "web", webManifests("green", "2.0"))

	p := preview(t, ns, "web", "?render="+old.Ref)
	assert.Equal(t, subresourcesv1alpha1.RenderSourceStored, p.RenderSource)
	assert.Equal(t, old.Ref, p.RenderRef)

	r := kubectl(t, "", "", "get", "--raw", previewPath(ns, "web")+"?render=00000000deadbeef")
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "NotFound")

	r = kubectl(t, "", "", "get", "--raw", previewPath(ns, "web")+"?render=HEAD")
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "BadRequest")
}

func TestPreviewRedactsSecrets(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const password, token = "correct-horse-battery", "s3cr3t-t0k3n"
	files := webManifests("blue", "1.0")
	files["secret.yaml"] = fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  password: %s
stringData:
  token: %s
`, base64.StdEncoding.EncodeToString([]byte(password)), token)
	setManifests(t, ns, "web", files)
	newRelease(t, ns, "web")

	out := mustKubectl(t, "", "", "get", "--raw", previewPath(ns, "web"))
	for _, leaked := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)), token} {
		assert.NotContains(t, out, leaked)
	}
	var secret *unstructured.Unstructured
	for _, o := range previewObjects(t, preview(t, ns, "web", "")) {
		if o.GetKind() == "Secret" {
			secret = o
		}
	}
	require.NotNil(t, secret)
	got, _, _ := unstructured.NestedString(secret.Object, "data", "password")
	assert.Regexp(t, `^redacted:[0-9a-f]{12}$`, got)
	got, _, _ = unstructured.NestedString(secret.Object, "stringData", "token")
	assert.Regexp(t, `^redacted:[0-9a-f]{12}$`, got)
}

func TestPreviewRBAC(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	setManifests(t, ns, "web", webManifests("blue", "1.0"))
	newRelease(t, ns, "web")
	grant(t, ns, "frank", subresourceRule("preview", "get"))
	grant(t, ns, "grace", subresourceRule("sync", "create"),
		// reading the Release and its Secrets directly is not the right to preview
		rbacPolicy("convoy.kumodo.io", "releases", "get"), rbacPolicy("", "secrets", "get"))

	r := kubectl(t, user(t, "frank"), "", "get", "--raw", previewPath(ns, "web"))
	require.NoError(t, r.err, r.stderr)
	r = kubectl(t, user(t, "grace"), "", "get", "--raw", previewPath(ns, "web"))
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "Forbidden")
}

func TestPreviewRenderFailures(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newRelease(t, ns, "nosource")
	setManifests(t, ns, "broken", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n", "b.yaml": "kind: [unclosed\n"})
	newRelease(t, ns, "broken")
	setManifests(t, ns, "noname", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n"})
	newRelease(t, ns, "noname")

	cases := []struct {
		release string
		want    []string
	}{
		{release: "nosource", want: []string{"RenderFailed", "SourceNotFound", ns + "/nosource-manifests"}},
		{release: "broken", want: []string{"RenderFailed", "ManifestInvalid", "b.yaml"}},
		{release: "noname", want: []string{"RenderFailed", "ManifestInvalid", "a.yaml", "name"}},
	}
	for _, tc := range cases {
		t.Run(tc.release, func(t *testing.T) {
			r := kubectl(t, "", "", "get", "--raw", previewPath(ns, tc.release), "-v=6")
			require.Error(t, r.err)
			for _, w := range tc.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.Contains(t, r.stderr, "422", "not a 500")
			assert.NotContains(t, r.stderr, "goroutine", "no stack")
		})
	}

	// The server keeps serving.
	setManifests(t, ns, "nosource", webManifests("blue", "1.0"))
	assert.Equal(t, subresourcesv1alpha1.RenderSourceFresh, preview(t, ns, "nosource", "").RenderSource)
}

// pin sets spec.pin.renderRef of the Release.
func pin(t *testing.T, namespace, name, ref string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"pin":{"renderRef":%q}}}`, ref)
	_, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Patch(context.Background(), name,
		"application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}
