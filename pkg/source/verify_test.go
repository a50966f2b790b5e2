package source

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
)

func verified(url, tag, secret string) *convoyv1alpha1.Release {
	return ociRelease(convoyv1alpha1.OCIRepositorySource{URL: url, Tag: tag,
		Verify: &convoyv1alpha1.OCIVerification{Provider: ProviderCosign, SecretRef: &convoyv1alpha1.LocalObjectReference{Name: secret}}})
}

func verificationCount(t *testing.T, outcome string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(verifications.WithLabelValues(ProviderCosign, outcome))
	require.NoError(t, err)
	return v
}

// A signed digest is fetched with its signer; the verdict is kept per
// namespace and keys; an unsigned digest, another key or a missing Secret
// is SignatureUnverified and its artifact is never downloaded.
func TestVerifyOCI(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	signed, err := reg.PushChart(ctx, "charts/web", "signed", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	unsigned, err := reg.PushChart(ctx, "charts/web", "unsigned", []byte("another chart"), []byte(`{"name":"web","version":"2.0.0"}`))
	require.NoError(t, err)
	key, pub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	_, otherPub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref, err := reg.Digest("charts/web", signed)
	require.NoError(t, err)
	require.NoError(t, cosigner.SignReferrer(ctx, ref, key, reg.ClientOptions(ctx)...))
	keys := func(ns string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"}, Data: data}
	}
	inputs := inputsOf(keys("shop", map[string][]byte{"ci.pub": pub}), keys("other", map[string][]byte{"ci.pub": pub}),
		keys("wrong", map[string][]byte{"other.pub": otherPub}))
	f, _ := newFetcher(t)
	reg.Requests()

	agecache.RegisterMetrics()
	verifiedBefore, unverifiedBefore := verificationCount(t, verifyVerified), verificationCount(t, verifyUnverified)
	hits := func() float64 {
		v, err := testutil.GetCounterMetricValue(agecache.Lookups(agecache.CacheSignature, "hit"))
		require.NoError(t, err)
		return v
	}
	hitsBefore := hits()

	src, err := f.Fetch(ctx, verified(reg.URL("charts/web"), "signed", "keys"), inputs)
	require.NoError(t, err)
	assert.Equal(t, chartTGZ, src.Chart)
	require.NotNil(t, src.Resolved.Verified)
	assert.Equal(t, "ci.pub", src.Resolved.Verified.Key)
	assert.Equal(t, "referrer", src.Resolved.Verified.Layout)
	first := reg.Requests()
	assert.Equal(t, 1, count(first, http.MethodHead, "/manifests/signed"), "one resolve, for the verification and the fetch: %v", first)
	// The signatures cost four requests: the .sig tag (404), the referrers,
	// the bundle's manifest and its blob; beside the client's first /v2/,
	// the resolve (HEAD) and the download (manifest, layer).
	assert.Len(t, first, 1+3+4, "%v", first)
	assert.Equal(t, 1, count(first, http.MethodGet, "/manifests/sha256-"), "the legacy tag: %v", first)
	assert.Equal(t, 1, count(first, http.MethodGet, "/referrers/"), "%v", first)

	// Again in the namespace: the verdict is reused, nothing is asked.
	_, err = f.Fetch(ctx, verified(reg.URL("charts/web"), "signed", "keys"), inputs)
	require.NoError(t, err)
	warm := reg.Requests()
	assert.Zero(t, count(warm, http.MethodGet, "/referrers/"), "the verdict is kept")
	assert.Empty(t, warm, "nothing at all within the resolution's max age")
	assert.Equal(t, hitsBefore+1, hits())

	// Another namespace with the same key verifies again.
	other := verified(reg.URL("charts/web"), "signed", "keys")
	other.Namespace = "other"
	_, err = f.Fetch(ctx, other, inputs)
	require.NoError(t, err)
	assert.NotZero(t, count(reg.Requests(), http.MethodGet, "/referrers/"), "never a verdict of another namespace")
	assert.Equal(t, verifiedBefore+3, verificationCount(t, verifyVerified))

	for _, tc := range []struct {
		name, ns, tag, secret string
		says                  []string
	}{
		{"unsigned", "shop", "unsigned", "keys", []string{unsigned, "no signature"}},
		{"another key", "wrong", "signed", "keys", []string{"other.pub"}},
		{"no Secret", "shop", "signed", "absent", []string{"verify.secretRef Secret shop/absent not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := verified(reg.URL("charts/web"), tc.tag, tc.secret)
			rel.Namespace = tc.ns
			reg.Requests()
			ferr := fetchErr(t, f, rel, inputs, ReasonSignatureUnverified)
			t.Log(ferr.Message)
			for _, s := range tc.says {
				assert.Contains(t, ferr.Message, s)
			}
			got := reg.Requests()
			for _, chart := range [][]byte{chartTGZ, []byte("another chart")} {
				assert.Zero(t, count(got, http.MethodGet, "/blobs/sha256:"+sha256Hex(chart)), "no chart is downloaded: %v", got)
			}
		})
	}
	assert.Equal(t, unverifiedBefore+3, verificationCount(t, verifyUnverified))
}

// A registry whose referrers index never ends is cut at
// --max-artifact-bytes, like its manifests.
func TestVerifyReferrersIndexBounded(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/referrers/") {
			return false
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		_, _ = w.Write([]byte(`{"schemaVersion":2,"manifests":[`))
		entry := []byte(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:` + strings.Repeat("0", 64) + `","size":1},`)
		for range (2 << 20) / len(entry) {
			if _, err := w.Write(entry); err != nil {
				return true
			}
		}
		return true
	}})
	digest, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	_, pub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	f, _ := newFetcher(t, func(o *Options) { o.MaxArtifactBytes = 1 << 20 })
	inputs := inputsOf(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "keys"}, Data: map[string][]byte{"ci.pub": pub}})
	ferr := fetchErr(t, f, verified(reg.URL("charts/web"), "1", "keys"), inputs, ReasonArtifactTooLarge)
	assert.Contains(t, ferr.Message, "the referrers index is larger than the limit of 1048576 bytes")
	assert.Contains(t, ferr.Message, digest)
}
