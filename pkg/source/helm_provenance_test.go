package source

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/provenance"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// pgpKey is an OpenPGP key made for a test (ed25519: fast) and its public
// key armored, as gpg --export --armor writes it.
func pgpKey(t *testing.T, name string) (*openpgp.Entity, []byte) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", strings.ToLower(name)+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	require.NoError(t, err)
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	require.NoError(t, err)
	require.NoError(t, e.Serialize(w))
	require.NoError(t, w.Close())
	return e, buf.Bytes()
}

// provOf is the provenance file of chart as helm package --sign writes it
// for the archive web-VERSION.tgz (Helm's Signatory.ClearSign).
func provOf(t *testing.T, e *openpgp.Entity, chart []byte, version string) []byte {
	t.Helper()
	return provNamed(t, e, chart, "web-"+version+".tgz")
}

// provNamed is the provenance file of chart for the archive filename.
func provNamed(t *testing.T, e *openpgp.Entity, chart []byte, filename string) []byte {
	t.Helper()
	prov, err := (&provenance.Signatory{Entity: e}).ClearSign(chart, filename, []byte("apiVersion: v2\nname: web\n"))
	require.NoError(t, err)
	return []byte(prov)
}

// helmRepo serves the charts web-VERSION.tgz of charts, by version, behind
// basic authentication (bob, pw), and the provenance files of provs beside
// them.
func helmRepo(t *testing.T, charts, provs map[string][]byte) *repository {
	t.Helper()
	repo := startRepository(t, "bob", "pw")
	var entries []string
	for v, data := range charts {
		repo.files["charts/web-"+v+".tgz"] = data
		entries = append(entries, fmt.Sprintf("  - {version: %q, urls: [charts/web-%s.tgz], digest: %s}", v, v, strings.TrimPrefix(sha256Hex(data), "sha256:")))
	}
	for v, prov := range provs {
		repo.files["charts/web-"+v+".tgz.prov"] = prov
	}
	repo.index = "apiVersion: v1\nentries:\n  web:\n" + strings.Join(entries, "\n") + "\n"
	return repo
}

// signedRelease is a Release of shop of chart web at version, verified with
// the keys of the Secret keys.
func signedRelease(repo *repository, version, keys string) *convoyv1alpha1.Release {
	return helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web", Version: version,
		SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "creds"}, CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"},
		Verify: &convoyv1alpha1.HelmVerification{Provider: verify.ProviderHelm, SecretRef: convoyv1alpha1.LocalObjectReference{Name: keys}}})
}

func helmInputs(repo *repository, keys map[string]map[string][]byte) Inputs {
	objs := []runtime.Object{caSecret("ca", repo.Server), secret("creds", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob"), "password": []byte("pw")})}
	for name, data := range keys {
		objs = append(objs, secret(name, corev1.SecretTypeOpaque, data))
	}
	return inputsOf(objs...)
}

// A chart whose provenance file is signed by a key of the Secret over its
// archive is served with its signer; every other is SignatureUnverified,
// names the repository, the chart and the version, and is not served.
func TestHelmProvenance(t *testing.T) {
	ctx := context.Background()
	alice, alicePub := pgpKey(t, "Alice")
	mallory, _ := pgpKey(t, "Mallory")
	a, b := []byte("chart web A"), []byte("chart web B")
	aProv := provOf(t, alice, a, "1.0.0")
	many := map[string][]byte{}
	for i := range 1000 {
		many[fmt.Sprintf("k%d.asc", i)] = alicePub
	}
	for _, tc := range []struct {
		name string
		// chart is served as 1.0.0 with prov (nil: none) beside it.
		chart, prov []byte
		keys        map[string][]byte
		says        string
	}{
		{name: "signed", chart: a, prov: aProv, keys: map[string][]byte{"release.asc": alicePub}},
		{name: "no provenance file", chart: a, keys: map[string][]byte{"release.asc": alicePub}, says: "/charts/web-1.0.0.tgz.prov (404): the chart is not signed"},
		{name: "an unknown key", chart: a, prov: provOf(t, mallory, a, "1.0.0"), keys: map[string][]byte{"release.asc": alicePub},
			says: fmt.Sprintf("is signed by the OpenPGP key %X, which is not in the key Secret", mallory.PrimaryKey.Fingerprint)},
		{name: "another archive's provenance", chart: b, prov: aProv, keys: map[string][]byte{"release.asc": alicePub},
			says: "signs " + sha256Hex(a) + " for web-1.0.0.tgz, and the chart archive is " + sha256Hex(b)},
		{name: "tampered", chart: b, prov: bytes.Replace(aProv, []byte(sha256Hex(a)), []byte(sha256Hex(b)), 1), keys: map[string][]byte{"release.asc": alicePub},
			says: "bad signature"},
		{name: "larger than the limit", chart: a, prov: append(bytes.Clone(aProv), bytes.Repeat([]byte("\n"), verify.MaxProvenanceBytes)...),
			keys: map[string][]byte{"release.asc": alicePub}, says: "is larger than the limit of 65536 bytes"},
		{name: "1,000 keys", chart: a, prov: aProv, keys: many, says: "the key Secret has 1000 entries, more than the limit of 256 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			provs := map[string][]byte{}
			if tc.prov != nil {
				provs["1.0.0"] = tc.prov
			}
			repo := helmRepo(t, map[string][]byte{"1.0.0": tc.chart}, provs)
			inputs := helmInputs(repo, map[string]map[string][]byte{"keys": tc.keys})
			f, _ := newFetcher(t)
			if tc.says != "" {
				ferr := fetchErr(t, f, signedRelease(repo, "", "keys"), inputs, verify.ReasonSignatureUnverified)
				t.Log(ferr.Message)
				assert.Contains(t, ferr.Message, tc.says)
				cause, _ := failure.Cause(ferr)
				assert.Equal(t, verify.ReasonSignatureUnverified, cause.Reason, "the reason the condition shows (the innermost failure): %s", cause.Message)
				assert.Contains(t, ferr.Message, repo.URL+" chart web 1.0.0 ", "names the repository, the chart and the version")
				return
			}
			src, err := f.Fetch(ctx, signedRelease(repo, "", "keys"), inputs)
			require.NoError(t, err)
			assert.Equal(t, tc.chart, src.Chart)
			assert.Equal(t, &subresourcesv1alpha1.SourceSignature{Provider: "helm", Format: "openpgp", Key: "release.asc",
				Fingerprint: fmt.Sprintf("%X", alice.PrimaryKey.Fingerprint), KeyID: fmt.Sprintf("%016X", alice.PrimaryKey.KeyId),
				Identity: "Alice <alice@example.com>", Layout: "prov"}, src.Resolved.Verified)
			assert.Contains(t, repo.taken(), "GET /charts/web-1.0.0.tgz.prov auth=true", "read beside the chart, with the credentials")
		})
	}
}

// A chart kept in the content cache is verified again for a Release of
// other keys, its provenance file read again; a Release whose keys did not
// sign it is refused, the cached chart notwithstanding.
func TestHelmProvenanceCachedChart(t *testing.T) {
	ctx := context.Background()
	alice, alicePub := pgpKey(t, "Alice")
	_, bobPub := pgpKey(t, "Bob")
	chart := []byte("chart web 1.0.0")
	repo := helmRepo(t, map[string][]byte{"1.0.0": chart}, map[string][]byte{"1.0.0": provOf(t, alice, chart, "1.0.0")})
	inputs := helmInputs(repo, map[string]map[string][]byte{"alice": {"alice.asc": alicePub}, "bob": {"bob.asc": bobPub},
		"both": {"alice.asc": alicePub, "bob.asc": bobPub}})
	f, _ := newFetcher(t)
	_, err := f.Fetch(ctx, signedRelease(repo, "", "alice"), inputs)
	require.NoError(t, err)
	assert.Equal(t, 1, countPrefix(repo.taken(), "GET /charts/web-1.0.0.tgz auth"))

	ferr := fetchErr(t, f, signedRelease(repo, "", "bob"), inputs, verify.ReasonSignatureUnverified)
	assert.Contains(t, ferr.Message, "which is not in the key Secret")
	requests := repo.taken()
	assert.Zero(t, countPrefix(requests, "GET /charts/web-1.0.0.tgz auth"), "the chart is kept: %v", requests)
	assert.Equal(t, 1, countPrefix(requests, "GET /charts/web-1.0.0.tgz.prov"), "its provenance read again for other keys")
	fetchErr(t, f, signedRelease(repo, "", "bob"), inputs, verify.ReasonSignatureUnverified)
	assert.Empty(t, repo.taken(), "the SignatureUnverified is kept (verify.UnverifiedMaxAge)")

	src, err := f.Fetch(ctx, signedRelease(repo, "", "both"), inputs)
	require.NoError(t, err)
	assert.Equal(t, "alice.asc", src.Resolved.Verified.Key)
	assert.Equal(t, []string{"GET /charts/web-1.0.0.tgz.prov auth=true"}, repo.taken())

	_, err = f.Fetch(ctx, signedRelease(repo, "", "both"), inputs)
	require.NoError(t, err)
	assert.Empty(t, repo.taken(), "the verdict and the chart kept")
}

// A stored render of a Helm repository chart is verified by the chart it
// names, under the Release's verify now: the same repository and chart, a
// version whose entry of the index lists its digest, signed.
func TestHelmVerifyRevision(t *testing.T) {
	ctx := context.Background()
	alice, alicePub := pgpKey(t, "Alice")
	signed, unsigned := []byte("chart web 1.0.0"), []byte("chart web 2.0.0")
	repo := helmRepo(t, map[string][]byte{"1.0.0": signed, "2.0.0": unsigned}, map[string][]byte{"1.0.0": provOf(t, alice, signed, "1.0.0")})
	inputs := helmInputs(repo, map[string]map[string][]byte{"keys": {"release.asc": alicePub}})
	f, _ := newFetcher(t)
	release := signedRelease(repo, "", "keys") // 2.0.0 now: what it follows does not matter
	revision := func(version string, chart []byte) *subresourcesv1alpha1.ResolvedSource {
		return &subresourcesv1alpha1.ResolvedSource{Kind: KindHelmRepository, URL: repo.URL, Chart: "web", Version: version, Digest: sha256Hex(chart)}
	}

	sig, err := f.VerifyRevision(ctx, release, inputs, revision("1.0.0", signed))
	require.NoError(t, err)
	require.NotNil(t, sig)
	require.NotNil(t, sig.Verified)
	assert.Equal(t, "release.asc", sig.Verified.Key)
	assert.Contains(t, repo.taken(), "GET /charts/web-1.0.0.tgz.prov auth=true")
	_, err = f.VerifyRevision(ctx, release, inputs, revision("1.0.0", signed))
	require.NoError(t, err)
	assert.Empty(t, repo.taken(), "the index, the chart and the verdict are kept")

	otherChart := revision("1.0.0", signed)
	otherChart.Chart = "api"
	otherURL := revision("1.0.0", signed)
	otherURL.URL += "/other"
	noDigest := revision("1.0.0", signed)
	noDigest.Digest = ""
	for _, tc := range []struct {
		name     string
		resolved *subresourcesv1alpha1.ResolvedSource
		reason   string
		says     string
	}{
		{"no revision", nil, verify.ReasonSignatureUnverified, "names no revision"},
		{"another chart", otherChart, verify.ReasonSignatureUnverified, "not from the Release's source"},
		{"another repository", otherURL, verify.ReasonSignatureUnverified, "not from the Release's source"},
		{"an OCI artifact", &subresourcesv1alpha1.ResolvedSource{Kind: KindOCIRepository, URL: repo.URL, Digest: sha256Hex(signed)}, verify.ReasonSignatureUnverified, "not from the Release's source"},
		{"no digest", noDigest, verify.ReasonSignatureUnverified, "not a version and a sha256 digest"},
		{"another digest than the index's", revision("1.0.0", unsigned), verify.ReasonSignatureUnverified, "and the index now lists " + sha256Hex(signed)},
		{"unsigned", revision("2.0.0", unsigned), verify.ReasonSignatureUnverified, "web-2.0.0.tgz.prov (404)"},
		{"a version no longer listed", revision("0.9.0", signed), sourcefailure.ReasonArtifactNotFound, "0.9.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.VerifyRevision(ctx, release, inputs, tc.resolved)
			ferr, ok := failure.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.reason, ferr.Reason, ferr.Message)
			assert.Contains(t, ferr.Message, tc.says)
		})
	}
}

// The provenance file of a chart on another host is read from there as the
// chart is, without the repository's credentials, through the address
// policy.
func TestHelmProvenanceElsewhere(t *testing.T) {
	ctx := context.Background()
	alice, alicePub := pgpKey(t, "Alice")
	chart := []byte("chart web elsewhere")
	elsewhere := startRepository(t, "", "")
	elsewhere.files["web.tgz"] = chart
	elsewhere.files["web.tgz.prov"] = provNamed(t, alice, chart, "web.tgz")
	repo := startRepository(t, "bob", "pw")
	repo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0, urls: [%s/web.tgz], digest: %s}\n", elsewhere.URL, strings.TrimPrefix(sha256Hex(chart), "sha256:"))
	f, _ := newFetcher(t)
	dialed := loopbackOnly(t, f)
	src, err := f.Fetch(ctx, signedRelease(repo, "", "keys"), helmInputs(repo, map[string]map[string][]byte{"keys": {"alice.asc": alicePub}}))
	require.NoError(t, err)
	assert.Equal(t, "alice.asc", src.Resolved.Verified.Key)
	assert.Equal(t, []string{"GET /web.tgz auth=false", "GET /web.tgz.prov auth=false"}, elsewhere.taken())
	assert.Contains(t, dialed.taken(), strings.TrimPrefix(elsewhere.URL, "https://"), "through the dialer's policy")
}
