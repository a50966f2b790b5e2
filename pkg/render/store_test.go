package render

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func storedConfigMap(name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"data":     data,
	}}
}

func TestStoreRoundTrip(t *testing.T) {
	client := fake.NewClientset()
	store := testEngine(Limits{}).Store(client)
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	r, err := New([]*unstructured.Unstructured{
		storedConfigMap("b", map[string]any{"replicas": int64(3)}),
		storedConfigMap("a", map[string]any{"big": "9007199254740993"}),
	})
	require.NoError(t, err)
	r.Resolved = &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r.example/web", Tag: "v1", Digest: "sha256:" + strings.Repeat("a", 64),
		Verified:    &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Key: "ci.pub"},
		VerifiedTag: &subresourcesv1alpha1.SourceSignature{Provider: "git", Key: "ci.pub"}}
	r.ValuesResolved = &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/team.git", Ref: "refs/heads/main", Commit: strings.Repeat("b", 40),
		Verified: &subresourcesv1alpha1.SourceSignature{Provider: "git", Key: "team.pub"}}

	require.NoError(t, store.Put(context.Background(), release, r))
	require.NoError(t, store.Put(context.Background(), release, r), "storing the same render twice is fine")

	secret, err := client.CoreV1().Secrets("shop").Get(context.Background(), SecretName("web", r.Ref), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "convoy-render.web."+r.Ref, secret.Name)
	assert.Equal(t, SecretType, secret.Type)
	assert.Equal(t, map[string]string{convoyv1alpha1.LabelRelease: "web", convoyv1alpha1.LabelRenderRef: r.Ref}, secret.Labels)
	require.Len(t, secret.OwnerReferences, 1)
	assert.Equal(t, "Release", secret.OwnerReferences[0].Kind)
	assert.Equal(t, release.UID, secret.OwnerReferences[0].UID)
	assert.Equal(t, []byte{0x1f, 0x8b}, secret.Data[SecretKey][:2], "gzip")
	assert.JSONEq(t, `{"kind":"OCIRepository","url":"oci://r.example/web","tag":"v1","digest":"sha256:`+strings.Repeat("a", 64)+`"}`,
		secret.Annotations[convoyv1alpha1.AnnotationResolvedSource], "the revision it was made from, not its signature")
	assert.JSONEq(t, `{"kind":"GitRepository","url":"https://git.example/team.git","ref":"refs/heads/main","commit":"`+strings.Repeat("b", 40)+`"}`,
		secret.Annotations[convoyv1alpha1.AnnotationResolvedValuesSource], "the values revision it was made from, not its signature")

	got, err := store.Get(context.Background(), "shop", "web", r.Ref)
	require.NoError(t, err)
	assert.Equal(t, r.Ref, got.Ref)
	assert.Equal(t, r.Objects, got.Objects, "integers stay int64 through the store")
	assert.Equal(t, &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r.example/web", Tag: "v1", Digest: "sha256:" + strings.Repeat("a", 64)},
		got.Resolved, "what the Secret says, unverified")
	assert.Equal(t, &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/team.git", Ref: "refs/heads/main", Commit: strings.Repeat("b", 40)},
		got.ValuesResolved, "the values revision the Secret says, unverified")

	// A render of a ConfigMap source names no revision.
	plain, err := New([]*unstructured.Unstructured{storedConfigMap("c", nil)})
	require.NoError(t, err)
	require.NoError(t, store.Put(context.Background(), release, plain))
	got, err = store.Get(context.Background(), "shop", "web", plain.Ref)
	require.NoError(t, err)
	assert.Nil(t, got.Resolved)
	assert.Nil(t, got.ValuesResolved)
}

func TestStoreGetErrors(t *testing.T) {
	r, err := New([]*unstructured.Unstructured{storedConfigMap("a", nil)})
	require.NoError(t, err)
	other, err := New([]*unstructured.Unstructured{storedConfigMap("b", nil)})
	require.NoError(t, err)
	good, err := encode(other.Objects)
	require.NoError(t, err)
	mine, err := encode(r.Objects)
	require.NoError(t, err)

	cases := []struct {
		name     string
		secret   *corev1.Secret
		wantErr  string
		notFound bool
	}{
		{name: "not stored", notFound: true},
		{name: "wrong type", secret: &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{SecretKey: good}}, wantErr: `has type "Opaque"`},
		{name: "no render key", secret: &corev1.Secret{Type: SecretType}, wantErr: `no "render" key`},
		{name: "not gzip", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: []byte("[]")}}, wantErr: "not gzip"},
		{name: "content of another render", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: good}}, wantErr: "holds render " + other.Ref},
		{name: "a source revision that is no JSON", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: mine},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{convoyv1alpha1.AnnotationResolvedSource: "oci://x@sha256:1"}}}, wantErr: "not a resolvedSource"},
		{name: "a source revision with a signature", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: mine},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{convoyv1alpha1.AnnotationResolvedSource: `{"kind":"OCIRepository","url":"oci://x","verified":{"provider":"cosign"}}`}}},
			wantErr: "no signature"},
		{name: "a source revision with a tag's signature", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: mine},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{convoyv1alpha1.AnnotationResolvedSource: `{"kind":"GitRepository","url":"https://x","verifiedTag":{"provider":"git"}}`}}},
			wantErr: "no signature"},
		{name: "a source revision with unknown fields", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: mine},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{convoyv1alpha1.AnnotationResolvedSource: `{"kind":"OCIRepository","url":"oci://x","trusted":true}`}}},
			wantErr: "unknown field"},
		{name: "a values source revision that is no JSON", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: mine},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{convoyv1alpha1.AnnotationResolvedValuesSource: "https://x@abc"}}},
			wantErr: "annotation " + convoyv1alpha1.AnnotationResolvedValuesSource},
		{name: "a values source revision with a signature", secret: &corev1.Secret{Type: SecretType, Data: map[string][]byte{SecretKey: mine},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{convoyv1alpha1.AnnotationResolvedValuesSource: `{"kind":"GitRepository","url":"https://x","verified":{"provider":"git"}}`}}},
			wantErr: "no signature"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.secret != nil {
				tc.secret.Name, tc.secret.Namespace = SecretName("web", r.Ref), "shop"
				_, err := client.CoreV1().Secrets("shop").Create(context.Background(), tc.secret, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			_, err := testEngine(Limits{}).Store(client).Get(context.Background(), "shop", "web", r.Ref)
			require.Error(t, err)
			assert.Equal(t, tc.notFound, errors.Is(err, ErrNotStored))
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestStorePutTooLarge(t *testing.T) {
	noise := make([]byte, 1<<20)
	_, err := rand.Read(noise)
	require.NoError(t, err)
	r, err := New([]*unstructured.Unstructured{storedConfigMap("huge", map[string]any{"noise": hex.EncodeToString(noise)})})
	require.NoError(t, err)
	client := fake.NewClientset()
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u"}}
	err = testEngine(Limits{}).Store(client).Put(context.Background(), release, r)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "shop/web")
	secrets, _ := client.CoreV1().Secrets("shop").List(context.Background(), metav1.ListOptions{})
	assert.Empty(t, secrets.Items, "nothing half-stored")
}

// A string within MaxStoredString is read back, however long encoding/json
// made it by escaping (each < six bytes).
func TestStoreLongEscapedString(t *testing.T) {
	client := fake.NewClientset()
	store := testEngine(Limits{}).Store(client)
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	r, err := New([]*unstructured.Unstructured{storedConfigMap("html", map[string]any{"index.html": strings.Repeat("<", MaxStoredString-1)})})
	require.NoError(t, err)
	require.NoError(t, store.Put(context.Background(), release, r))
	got, err := store.Get(context.Background(), "shop", "web", r.Ref)
	require.NoError(t, err)
	assert.Equal(t, r.Objects, got.Objects)
}
