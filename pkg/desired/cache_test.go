package desired

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// countingRenderer counts its renders.
type countingRenderer struct{ n int }

func (c *countingRenderer) Render(context.Context, *convoyv1alpha1.Release) (*render.Render, error) {
	c.n++
	return &render.Render{Ref: freshRef, Size: 100, Objects: []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web", "namespace": "shop"},
			"data": map[string]any{"n": fmt.Sprint(c.n)}}},
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"},
			"spec": map[string]any{"replicas": int64(3), "paused": false, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}}},
	}}, nil
}

// A render taken from the cache is the render that was put in it, numbers
// as int64 as the decoders of unstructured give them.
func TestRenderCacheKeepsTheObjects(t *testing.T) {
	cache := NewRenderCache(DefaultRenderCacheBytes, time.Hour, clocktesting.NewFakeClock(time.Now()))
	want, err := (&countingRenderer{}).Render(context.Background(), nil)
	require.NoError(t, err)
	cache.put("k", want)
	got, ok := cache.get("k")
	require.True(t, ok)
	assert.Equal(t, want, got)
	assert.Less(t, cache.entries.Size(), 200, "kept compressed")
}

// homeAccess is the access of shop/default to a home cluster that holds
// the metadata of objs (inputMeta), read afresh each time, on a fake
// clock.
func homeAccess(t *testing.T, objs ...runtime.Object) (*metadatafake.FakeMetadataClient, *clocktesting.FakeClock, *cluster.Access) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	return meta, clk, &cluster.Access{Identity: cluster.Identity{Namespace: "shop", Name: "default"},
		HomeSnapshots: cluster.NewSnapshots(meta, time.Nanosecond, clk), Target: &cluster.Target{}}
}

func inputMeta(kind, name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv}}
}

// Each input of a render changing forces a new render; all equal reuse it.
func TestRenderCacheKeys(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme,
		inputMeta("ConfigMap", "web-manifests", "1"), inputMeta("Secret", "creds", "5"))
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	// A LIST per call: the test changes the inputs between renders.
	access := &cluster.Access{Identity: cluster.Identity{Namespace: "shop", Name: "default"},
		HomeSnapshots: cluster.NewSnapshots(meta, time.Nanosecond, clk), Target: &cluster.Target{}}
	cache := NewRenderCache(1000, time.Hour, clk)
	next := &countingRenderer{}
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1", Generation: 1},
		Spec: convoyv1alpha1.ReleaseSpec{
			Source:  convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web-manifests"}},
			Content: &convoyv1alpha1.ReleaseContent{ValuesFrom: []convoyv1alpha1.ValuesReference{{Kind: "Secret", Name: "creds"}}},
		}}
	render := func() {
		clk.Step(time.Millisecond) // past the LISTs' freshness
		_, err := cache.Renderer(next, access).Render(context.Background(), release)
		require.NoError(t, err)
	}
	render()
	render()
	assert.Equal(t, 1, next.n, "nothing changed")

	update := func(kind, name, rv string) {
		gvr := configMapsResource
		if kind == "Secret" {
			gvr = secretsResource
		}
		_, err := meta.Resource(gvr).Namespace("shop").(metadatafake.MetadataClient).UpdateFake(inputMeta(kind, name, rv), metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	update("ConfigMap", "web-manifests", "2")
	render()
	assert.Equal(t, 2, next.n, "the source changed")
	update("Secret", "creds", "6")
	render()
	assert.Equal(t, 3, next.n, "a valuesFrom object changed")
	// A spec change that a render does not read renders nothing again.
	release.Generation = 2
	release.Spec.SyncPolicy = convoyv1alpha1.SyncPolicy{Automatic: &convoyv1alpha1.AutomaticSync{},
		Interval: &metav1.Duration{Duration: time.Minute}}
	release.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{}
	render()
	assert.Equal(t, 3, next.n, "only syncPolicy and healthAssessment changed")
	release.Generation = 3
	release.Spec.TargetNamespace = "shop-2"
	render()
	assert.Equal(t, 4, next.n, "the spec changed")
	release.Spec.Mutations = []convoyv1alpha1.Mutation{{}}
	render()
	assert.Equal(t, 5, next.n, "the mutations changed")
	access.Identity.Name = "deployer"
	render()
	assert.Equal(t, 6, next.n, "another identity")
	clk.Step(time.Hour)
	render()
	assert.Equal(t, 7, next.n, "too old")
	render()
	assert.Equal(t, 7, next.n)
}

// An input the shared LIST did not see is read by the render: a render made
// while a required input is missing from the LIST (it came after the LIST)
// is not kept, or it would be reused once the input is gone again; a
// missing optional valuesFrom object is a key like any resourceVersion.
func TestRenderCacheKeysOfMissingInputs(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name      string
		valuesRef convoyv1alpha1.ValuesReference
		listed    []runtime.Object
		renders   int
	}{
		{"the source missing", convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "values", Optional: true},
			[]runtime.Object{inputMeta("ConfigMap", "values", "3")}, 2},
		{"a required valuesFrom missing", convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "values"},
			[]runtime.Object{inputMeta("ConfigMap", "web-manifests", "1")}, 2},
		{"an optional valuesFrom missing", convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "values", Optional: true},
			[]runtime.Object{inputMeta("ConfigMap", "web-manifests", "1")}, 1},
		{"all listed", convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "values"},
			[]runtime.Object{inputMeta("ConfigMap", "web-manifests", "1"), inputMeta("ConfigMap", "values", "3")}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			access := &cluster.Access{Identity: cluster.Identity{Namespace: "shop", Name: "default"},
				HomeSnapshots: cluster.NewSnapshots(metadatafake.NewSimpleMetadataClient(scheme, tt.listed...), time.Hour, clk), Target: &cluster.Target{}}
			release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"},
				Spec: convoyv1alpha1.ReleaseSpec{
					Source:  convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web-manifests"}},
					Content: &convoyv1alpha1.ReleaseContent{ValuesFrom: []convoyv1alpha1.ValuesReference{tt.valuesRef}},
				}}
			next := &countingRenderer{}
			renderer := NewRenderCache(1000, time.Hour, clk).Renderer(next, access)
			for range 2 {
				_, err := renderer.Render(context.Background(), release)
				require.NoError(t, err)
			}
			assert.Equal(t, tt.renders, next.n)
		})
	}
}

// resolvingRenderer is a countingRenderer whose source resolves to digest,
// or fails with err.
type resolvingRenderer struct {
	countingRenderer
	digest   string
	err      error
	resolved int
}

func (r *resolvingRenderer) ResolveSource(context.Context, *convoyv1alpha1.Release) (string, error) {
	r.resolved++
	return r.digest, r.err
}

// A Release whose source is in a registry is rendered again when its tag
// resolves to another digest or its pull Secret or its verification keys
// change, and never taken
// from the cache when its source cannot be resolved (the render says why).
func TestRenderCacheKeysOfRegistrySources(t *testing.T) {
	meta, clk, access := homeAccess(t, inputMeta("Secret", "pull", "1"), inputMeta("Secret", "keys", "1"))
	cache := NewRenderCache(1000, time.Hour, clk)
	next := &resolvingRenderer{digest: "sha256:aaa"}
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1", Generation: 1},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{
			URL: "oci://registry.example/web", Tag: "stable", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "pull"},
			Verify: &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "keys"}}}}}}
	render := func() {
		clk.Step(time.Millisecond)
		_, err := cache.Renderer(next, access).Render(context.Background(), release)
		require.NoError(t, err)
	}
	render()
	render()
	assert.Equal(t, 1, next.n, "nothing changed")
	assert.Equal(t, 2, next.resolved, "resolved each time")

	next.digest = "sha256:bbb"
	render()
	assert.Equal(t, 2, next.n, "the tag moved")
	_, err := meta.Resource(secretsResource).Namespace("shop").(metadatafake.MetadataClient).UpdateFake(inputMeta("Secret", "pull", "2"), metav1.UpdateOptions{})
	require.NoError(t, err)
	render()
	assert.Equal(t, 3, next.n, "the pull Secret changed")
	_, err = meta.Resource(secretsResource).Namespace("shop").(metadatafake.MetadataClient).UpdateFake(inputMeta("Secret", "keys", "2"), metav1.UpdateOptions{})
	require.NoError(t, err)
	render()
	assert.Equal(t, 4, next.n, "the keys to verify with changed: verified again")

	// Keyless: the trust root's Secret is an input as the keys' are.
	_, err = meta.Resource(secretsResource).Namespace("shop").(metadatafake.MetadataClient).CreateFake(inputMeta("Secret", "root", "1"), metav1.CreateOptions{})
	require.NoError(t, err)
	release.Spec.Source.OCIRepository.Verify = &convoyv1alpha1.OCIVerification{Provider: "cosign",
		MatchOIDCIdentity:    []convoyv1alpha1.OIDCIdentityMatch{{Issuer: "i", Subject: "s"}},
		TrustedRootSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "root"}}
	release.Generation++
	render()
	render()
	assert.Equal(t, 5, next.n, "keyless: rendered once")
	_, err = meta.Resource(secretsResource).Namespace("shop").(metadatafake.MetadataClient).UpdateFake(inputMeta("Secret", "root", "2"), metav1.UpdateOptions{})
	require.NoError(t, err)
	render()
	assert.Equal(t, 6, next.n, "the trust root changed: verified again")

	next.err = errors.New("registry down")
	render()
	render()
	assert.Equal(t, 8, next.n, "no key without a digest: rendered, which tells why")

	plain := &countingRenderer{}
	_, err = cache.Renderer(plain, access).Render(context.Background(), release)
	require.NoError(t, err)
	_, err = cache.Renderer(plain, access).Render(context.Background(), release)
	require.NoError(t, err)
	assert.Equal(t, 2, plain.n, "a renderer that cannot resolve sources is never cached for them")
}

// A Git or Helm repository source's verify Secret is an input of its
// renders, as an OCI source's is: a key removed renders again, verified
// again.
func TestRenderCacheKeysOfGitAndHelmVerify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		digest string
		source convoyv1alpha1.ReleaseSource
	}{
		{"git", "git:0123456789abcdef0123456789abcdef01234567", convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{
			URL: "https://git.example/apps.git", Ref: convoyv1alpha1.GitReference{Branch: "main"},
			Verify: &convoyv1alpha1.GitVerification{SecretRef: convoyv1alpha1.LocalObjectReference{Name: "keys"}}}}},
		{"helm", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
			URL: "https://charts.example", Chart: "web",
			Verify: &convoyv1alpha1.HelmVerification{Provider: "helm", SecretRef: convoyv1alpha1.LocalObjectReference{Name: "keys"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta, clk, access := homeAccess(t, inputMeta("Secret", "keys", "1"))
			cache := NewRenderCache(1000, time.Hour, clk)
			next := &resolvingRenderer{digest: tc.digest}
			release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1", Generation: 1},
				Spec: convoyv1alpha1.ReleaseSpec{Source: tc.source}}
			for range 2 {
				clk.Step(time.Millisecond)
				_, err := cache.Renderer(next, access).Render(context.Background(), release)
				require.NoError(t, err)
			}
			assert.Equal(t, 1, next.n, "nothing changed")
			_, err := meta.Resource(secretsResource).Namespace("shop").(metadatafake.MetadataClient).UpdateFake(inputMeta("Secret", "keys", "2"), metav1.UpdateOptions{})
			require.NoError(t, err)
			clk.Step(time.Millisecond)
			_, err = cache.Renderer(next, access).Render(context.Background(), release)
			require.NoError(t, err)
			assert.Equal(t, 2, next.n, "the keys to verify with changed: verified again")
		})
	}
}

func TestRenderCacheBounds(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme, inputMeta("ConfigMap", "src", "1"))
	clk := clocktesting.NewFakeClock(time.Now())
	access := &cluster.Access{HomeSnapshots: cluster.NewSnapshots(meta, time.Hour, clk), Target: &cluster.Target{}}
	// Room for two and a half renders, compressed.
	one := NewRenderCache(DefaultRenderCacheBytes, time.Hour, clk)
	r, err := (&countingRenderer{}).Render(context.Background(), nil)
	require.NoError(t, err)
	one.put("k", r)
	cache := NewRenderCache(one.entries.Size()*5/2, time.Hour, clk)
	next := &countingRenderer{}
	for i := range 3 {
		release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "r", UID: types.UID("u" + string(rune('0'+i)))},
			Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "src"}}}}
		_, err := cache.Renderer(next, access).Render(context.Background(), release)
		require.NoError(t, err)
	}
	assert.Equal(t, 2, cache.Len(), "room for two and a half renders holds two")

	// Inputs the identity may not list: rendered every time, never kept.
	forbidden := metadatafake.NewSimpleMetadataClient(scheme)
	forbidden.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(configMapsResource.GroupResource(), "", errors.New("no"))
	})
	access.HomeSnapshots = cluster.NewSnapshots(forbidden, time.Hour, clk)
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x", UID: "ux"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "src"}}}}
	before := next.n
	for range 2 {
		_, err := cache.Renderer(next, access).Render(context.Background(), release)
		require.NoError(t, err)
	}
	assert.Equal(t, before+2, next.n)
}

// valuesResolvingRenderer is a resolvingRenderer whose values source
// resolves to values, or fails with valuesErr.
type valuesResolvingRenderer struct {
	resolvingRenderer
	values         string
	valuesErr      error
	valuesResolved int
}

func (r *valuesResolvingRenderer) ResolveValuesSource(context.Context, *convoyv1alpha1.Release) (string, error) {
	r.valuesResolved++
	return r.values, r.valuesErr
}

// A Release that reads values files from spec.valuesSource is rendered
// again when its values branch moves or a Secret of the values source
// changes, and never taken from the cache when the values source cannot be
// resolved; one that reads none does not resolve it.
func TestRenderCacheKeysOfValuesSource(t *testing.T) {
	meta, clk, access := homeAccess(t, inputMeta("Secret", "creds", "1"), inputMeta("Secret", "keys", "1"), inputMeta("ConfigMap", "vals", "1"))
	cache := NewRenderCache(1000, time.Hour, clk)
	next := &valuesResolvingRenderer{resolvingRenderer: resolvingRenderer{digest: "sha256:aaa"}, values: "git:1111111111111111111111111111111111111111"}
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1", Generation: 1},
		Spec: convoyv1alpha1.ReleaseSpec{
			Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://registry.example/web", Tag: "stable"}},
			ValuesSource: &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{
				URL: "https://git.example/team.git", Ref: convoyv1alpha1.GitReference{Branch: "main"},
				SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "creds"},
				Verify:    &convoyv1alpha1.GitVerification{SecretRef: convoyv1alpha1.LocalObjectReference{Name: "keys"}}}},
			Content: &convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Path: "envs/prod/values.yaml", Source: convoyv1alpha1.ValuesFileSourceValues}}},
		}}
	render := func() {
		clk.Step(time.Millisecond)
		_, err := cache.Renderer(next, access).Render(context.Background(), release)
		require.NoError(t, err)
	}
	update := func(kind, name, rv string) {
		res := secretsResource
		if kind == "ConfigMap" {
			res = configMapsResource
		}
		_, err := meta.Resource(res).Namespace("shop").(metadatafake.MetadataClient).UpdateFake(inputMeta(kind, name, rv), metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	key := func() string {
		k, ok := cache.key(context.Background(), next, access, release)
		require.True(t, ok)
		return k
	}
	render()
	render()
	assert.Equal(t, 1, next.n, "nothing changed")
	assert.Equal(t, 2, next.valuesResolved, "the values source resolved each time")

	before := key()
	next.values = "git:2222222222222222222222222222222222222222"
	assert.NotEqual(t, before, key(), "the key names the values source's revision")
	render()
	assert.Equal(t, 2, next.n, "the values branch moved")
	update("Secret", "creds", "2")
	render()
	assert.Equal(t, 3, next.n, "the values source's credentials changed")
	update("Secret", "keys", "2")
	render()
	assert.Equal(t, 4, next.n, "the values source's keys changed: verified again")

	next.valuesErr = errors.New("git server down")
	render()
	render()
	assert.Equal(t, 6, next.n, "no key without the values source's revision: rendered, which tells why")
	next.valuesErr = nil

	// A ConfigMap values source is keyed by its resourceVersion.
	release.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "vals"}}
	release.Generation++
	render()
	render()
	assert.Equal(t, 7, next.n)
	update("ConfigMap", "vals", "2")
	render()
	assert.Equal(t, 8, next.n, "the values ConfigMap changed")

	// No entry reads it: it is not resolved, nor an input.
	release.Spec.Content.ValuesFiles[0].Source = convoyv1alpha1.ValuesFileSourceChart
	release.Generation++
	resolved := next.valuesResolved
	render()
	update("ConfigMap", "vals", "3")
	render()
	assert.Equal(t, 9, next.n, "the values source is not an input of a render that reads none of it")
	assert.Equal(t, resolved, next.valuesResolved)

	plain := &resolvingRenderer{digest: "sha256:aaa"}
	release.Spec.Content.ValuesFiles[0].Source = convoyv1alpha1.ValuesFileSourceValues
	release.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://git.example/team.git", Ref: convoyv1alpha1.GitReference{Branch: "main"}}}
	for range 2 {
		_, err := cache.Renderer(plain, access).Render(context.Background(), release)
		require.NoError(t, err)
	}
	assert.Equal(t, 2, plain.n, "a renderer that cannot resolve values sources is never cached for them")
}
