package source

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

func verified(url, tag, secret string) *convoyv1alpha1.Release {
	return ociRelease(convoyv1alpha1.OCIRepositorySource{URL: url, Tag: tag,
		Verify: &convoyv1alpha1.OCIVerification{Provider: verify.ProviderCosign, SecretRef: &convoyv1alpha1.LocalObjectReference{Name: secret}}})
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
			ferr := fetchErr(t, f, rel, inputs, verify.ReasonSignatureUnverified)
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
	ferr := fetchErr(t, f, verified(reg.URL("charts/web"), "1", "keys"), inputs, sourcefailure.ReasonArtifactTooLarge)
	assert.Contains(t, ferr.Message, "the referrers index is larger than the limit of 1048576 bytes")
	assert.Contains(t, ferr.Message, digest)
}

func keyless(url, tag, rootSecret string, ids ...convoyv1alpha1.OIDCIdentityMatch) *convoyv1alpha1.Release {
	v := &convoyv1alpha1.OCIVerification{Provider: verify.ProviderCosign, MatchOIDCIdentity: ids}
	if rootSecret != "" {
		v.TrustedRootSecretRef = &convoyv1alpha1.LocalObjectReference{Name: rootSecret}
	}
	return ociRelease(convoyv1alpha1.OCIRepositorySource{URL: url, Tag: tag, Verify: v})
}

type publicRoot struct {
	root  []byte
	err   error
	calls int
}

func (p *publicRoot) TrustRoot(context.Context) (*cosign.TrustRoot, error) {
	p.calls++
	if p.err != nil {
		return nil, p.err
	}
	return cosign.ParseTrustRoot(p.root)
}

// Keyless: a signature of the expected identity verifies with the trust
// root of the Release's Secret (or the public one where the server allows
// it) and names its signer; another identity, a missing or broken trust
// root, or none allowed is SignatureUnverified and nothing is downloaded.
func TestVerifyOCIKeyless(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	signed, err := reg.PushChart(ctx, "charts/web", "signed", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	ss, err := cosigner.NewSigstore()
	require.NoError(t, err)
	ref, err := reg.Digest("charts/web", signed)
	require.NoError(t, err)
	const issuer, subject = "https://token.actions.githubusercontent.com", "https://github.com/kumodo/web/.github/workflows/release.yaml@refs/tags/v1"
	require.NoError(t, ss.SignTag(ctx, ref, issuer, subject, cosigner.Evidence{}, reg.ClientOptions(ctx)...))
	rootJSON, err := ss.TrustedRoot(cosigner.RootOptions{})
	require.NoError(t, err)
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Data: data}
	}
	inputs := inputsOf(secret("root", map[string][]byte{verify.TrustRootKey: rootJSON}), secret("empty", map[string][]byte{"x": []byte("y")}),
		secret("broken", map[string][]byte{verify.TrustRootKey: []byte(`{"mediaType":"nope"}`)}))
	ours := convoyv1alpha1.OIDCIdentityMatch{Issuer: `https://token\.actions\.githubusercontent\.com`, Subject: `https://github\.com/kumodo/web/.+`}
	f, _ := newFetcher(t)

	src, err := f.Fetch(ctx, keyless(reg.URL("charts/web"), "signed", "root", ours), inputs)
	require.NoError(t, err)
	assert.Equal(t, chartTGZ, src.Chart)
	require.NotNil(t, src.Resolved.Verified)
	assert.Equal(t, issuer, src.Resolved.Verified.Issuer)
	assert.Equal(t, subject, src.Resolved.Verified.Subject)
	assert.Equal(t, "tag", src.Resolved.Verified.Layout)
	assert.Empty(t, src.Resolved.Verified.Key)

	public := &publicRoot{root: rootJSON}
	fp, _ := newFetcher(t, func(o *Options) { o.PublicTrustRoot = public })
	_, err = fp.Fetch(ctx, keyless(reg.URL("charts/web"), "signed", "", ours), inputs)
	require.NoError(t, err)
	assert.Equal(t, 1, public.calls)

	for _, tc := range []struct {
		name string
		f    *Fetcher
		rel  *convoyv1alpha1.Release
		says []string
	}{
		{"another subject", f, keyless(reg.URL("charts/web"), "signed", "root", convoyv1alpha1.OIDCIdentityMatch{Issuer: ours.Issuer, Subject: "https://github.com/kumodo/api/.+"}),
			[]string{"none by an expected identity", `found issuer "` + issuer + `", subject "` + subject + `"`}},
		{"no trust root Secret", f, keyless(reg.URL("charts/web"), "signed", "absent", ours), []string{"verify.trustedRootSecretRef Secret shop/absent not found"}},
		{"no trusted_root.json", f, keyless(reg.URL("charts/web"), "signed", "empty", ours), []string{"has no key trusted_root.json"}},
		{"a broken trust root", f, keyless(reg.URL("charts/web"), "signed", "broken", ours), []string{"not a Sigstore trusted_root.json"}},
		{"no public root allowed", f, keyless(reg.URL("charts/web"), "signed", "", ours), []string{"--sigstore-public-trust-root is off"}},
		{"a bad expression", f, keyless(reg.URL("charts/web"), "signed", "root", convoyv1alpha1.OIDCIdentityMatch{Issuer: "(", Subject: "x"}), []string{"not a regular expression"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.Requests()
			ferr := fetchErr(t, tc.f, tc.rel, inputs, verify.ReasonSignatureUnverified)
			t.Log(ferr.Message)
			for _, s := range tc.says {
				assert.Contains(t, ferr.Message, s)
			}
			assert.Zero(t, count(reg.Requests(), http.MethodGet, "/blobs/sha256:"+sha256Hex(chartTGZ)), "the chart is not downloaded")
		})
	}

	// The public root unavailable: a transient failure, not a verdict.
	down := &publicRoot{err: errors.New("connection refused")}
	fd, _ := newFetcher(t, func(o *Options) { o.PublicTrustRoot = down })
	fetchErr(t, fd, keyless(reg.URL("charts/web"), "signed", "", ours), inputs, sourcefailure.ReasonSourceUnreachable)
}

// The public trust root is fetched through the sources' address policy:
// a mirror the policy refuses (here a link-local address, refused before
// any packet is sent) fails the verification as unreachable, naming why.
func TestPublicTrustRootThroughAddressPolicy(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	_, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	f, _ := newFetcher(t, func(o *Options) { o.PublicSigstore = true; o.SigstoreMirror = "https://169.254.169.254" })
	rel := keyless(reg.URL("charts/web"), "1", "", convoyv1alpha1.OIDCIdentityMatch{Issuer: "i", Subject: "s"})
	failures := func() float64 {
		v, err := testutil.GetCounterMetricValue(trustRootFetches.WithLabelValues("failure"))
		require.NoError(t, err)
		return v
	}
	before := failures()
	ferr := fetchErr(t, f, rel, inputsOf(), sourcefailure.ReasonSourceUnreachable)
	assert.Equal(t, before+1, failures(), "counted")
	assert.Contains(t, ferr.Message, "the public Sigstore trust root could not be fetched")
	assert.Contains(t, ferr.Message, "169.254.169.254")
	t.Log(ferr.Message)
}

// A stored render of a Release that asks for signatures is verified by the
// revision its Secret names: a signed digest of the Release's own
// repository verifies (the verdict shared with fresh renders); no
// revision, another repository, an unsigned digest or no digest at all is
// SignatureUnverified. A Release that asks for none is not checked.
func TestVerifyRevision(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	signed, err := reg.PushChart(ctx, "charts/web", "signed", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	unsigned, err := reg.PushChart(ctx, "charts/web", "unsigned", []byte("another chart"), []byte(`{"name":"web","version":"2.0.0"}`))
	require.NoError(t, err)
	key, pub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref, err := reg.Digest("charts/web", signed)
	require.NoError(t, err)
	require.NoError(t, cosigner.SignReferrer(ctx, ref, key, reg.ClientOptions(ctx)...))
	inputs := inputsOf(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "keys"}, Data: map[string][]byte{"ci.pub": pub}})
	f, _ := newFetcher(t)
	release := verified(reg.URL("charts/web"), "unsigned", "keys") // the tag it follows now does not matter
	revision := func(url, digest string) *subresourcesv1alpha1.ResolvedSource {
		return &subresourcesv1alpha1.ResolvedSource{Kind: KindOCIRepository, URL: url, Tag: "signed", Digest: digest}
	}

	sig, err := f.VerifyRevision(ctx, release, inputs, revision(reg.URL("charts/web"), signed))
	require.NoError(t, err)
	require.NotNil(t, sig)
	require.NotNil(t, sig.Verified)
	assert.Equal(t, "ci.pub", sig.Verified.Key)
	assert.Nil(t, sig.VerifiedTag)
	reg.Requests()
	_, err = f.VerifyRevision(ctx, release, inputs, revision(reg.URL("charts/web"), signed))
	require.NoError(t, err)
	assert.Empty(t, reg.Requests(), "the verdict is kept")

	for _, tc := range []struct {
		name     string
		resolved *subresourcesv1alpha1.ResolvedSource
		says     string
	}{
		{"no revision", nil, "names no revision"},
		{"another repository", revision(reg.URL("charts/other"), signed), "not from the Release's source"},
		{"a Git commit", &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: reg.URL("charts/web"), Commit: strings.Repeat("a", 40)}, "not from the Release's source"},
		{"unsigned", revision(reg.URL("charts/web"), unsigned), "no signature"},
		{"no digest", revision(reg.URL("charts/web"), ""), "not a sha256 digest"},
		{"a digest of another algorithm", revision(reg.URL("charts/web"), "sha512:"+strings.Repeat("a", 128)), "not a sha256 digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.VerifyRevision(ctx, release, inputs, tc.resolved)
			ferr, ok := failure.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, verify.ReasonSignatureUnverified, ferr.Reason)
			assert.Contains(t, ferr.Message, tc.says)
		})
	}

	plain := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "unsigned"})
	sig, err = f.VerifyRevision(ctx, plain, inputs, nil)
	require.NoError(t, err)
	assert.Nil(t, sig, "no signature asked, none checked")
}

// A SignatureUnverified verdict is kept for verify.UnverifiedMaxAge by the key of
// the verified ones: twenty fetches of an unsigned digest, or of one whose
// signature manifest is 30 MiB, read the signature tag once; a refresh
// reads it again, so does another namespace, and anyone once the verdict
// is older than verify.UnverifiedMaxAge. A failure of the registry is not kept.
func TestVerifyUnverifiedKept(t *testing.T) {
	ctx := context.Background()
	_, pub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	keys := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"}, Data: map[string][]byte{"ci.pub": pub}}
	}
	inputs := inputsOf(keys("shop"), keys("other"))
	hits := func() float64 {
		v, err := testutil.GetCounterMetricValue(agecache.Lookups(agecache.CacheSignature, "hit"))
		require.NoError(t, err)
		return v
	}
	large := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ".sig") {
			return false
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", strconv.Itoa(30<<20))
		chunk := []byte(strings.Repeat(" ", 32<<10))
		for range (30 << 20) / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		return true
	}
	failing := func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, ".sig") {
			return false
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}
	for _, tc := range []struct {
		name   string
		hook   func(w http.ResponseWriter, r *http.Request) bool
		reason string
		says   string
		// kept: the verdict is kept; else fetches is how many read it.
		kept    bool
		fetches int
	}{
		{name: "no signature", reason: verify.ReasonSignatureUnverified, says: "no signature of sha256:", kept: true, fetches: 20},
		{name: "a signature manifest of 30 MiB", hook: large, reason: verify.ReasonSignatureUnverified,
			says: ".sig is 31457280 bytes, more than the limit of 1048576 bytes (its Content-Length: refused before it was read)", kept: true, fetches: 20},
		{name: "the registry failing", hook: failing, reason: sourcefailure.ReasonSourceUnreachable, says: "reading the signatures", fetches: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := startRegistry(t, ociregistry.Options{Hook: tc.hook})
			_, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
			require.NoError(t, err)
			f, clk := newFetcher(t)
			rel := verified(reg.URL("charts/web"), "1", "keys")
			sigReads := func() int { return count(reg.Requests(), http.MethodGet, ".sig") }
			reg.Requests()
			hitsBefore := hits()
			for range tc.fetches {
				ferr := fetchErr(t, f, rel, inputs, tc.reason)
				assert.Contains(t, ferr.Message, tc.says)
			}
			if !tc.kept {
				assert.GreaterOrEqual(t, sigReads(), tc.fetches, "read at each fetch")
				assert.Equal(t, hitsBefore, hits())
				return
			}
			assert.Equal(t, 1, sigReads(), "the signature tag read once")
			assert.Equal(t, hitsBefore+float64(tc.fetches-1), hits(), "counted as hits of the signature cache")

			clk.SetTime(clk.Now().Add(time.Second))
			fetchErr(t, f, rel, inputs, tc.reason)
			assert.Zero(t, sigReads(), "kept a second later")
			_, err = f.Fetch(WithFreshAfter(ctx, clk.Now()), rel, inputs)
			assert.Equal(t, tc.reason, failure.ReasonOf(err), "%v", err)
			assert.Equal(t, 1, sigReads(), "a refresh reads it again")
			fetchErr(t, f, rel, inputs, tc.reason)
			assert.Zero(t, sigReads(), "what the refresh read serves the others")

			other := verified(reg.URL("charts/web"), "1", "keys")
			other.Namespace = "other"
			fetchErr(t, f, other, inputs, tc.reason)
			assert.Equal(t, 1, sigReads(), "never a verdict of another namespace")

			clk.SetTime(clk.Now().Add(verify.UnverifiedMaxAge))
			fetchErr(t, f, rel, inputs, tc.reason)
			assert.Equal(t, 1, sigReads(), "read again past verify.UnverifiedMaxAge")
		})
	}
}
