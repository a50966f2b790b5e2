package verify

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"helm.sh/helm/v4/pkg/provenance"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// helmSigner is an OpenPGP key of the tests (ed25519: fast) and its public
// key, armored as gpg --export --armor writes it.
type helmSigner struct {
	entity *openpgp.Entity
	public []byte
}

func newHelmSigner(t testing.TB, name string) helmSigner {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", strings.ToLower(name)+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	require.NoError(t, err)
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	require.NoError(t, err)
	require.NoError(t, e.Serialize(w))
	require.NoError(t, w.Close())
	return helmSigner{entity: e, public: buf.Bytes()}
}

// sign is the provenance file of archive named filename, as helm package
// --sign writes it (Helm's own Signatory.ClearSign).
func (s helmSigner) sign(t testing.TB, archive []byte, filename string) []byte {
	t.Helper()
	prov, err := (&provenance.Signatory{Entity: s.entity}).ClearSign(archive, filename, []byte("apiVersion: v2\nname: web\nversion: 1.0.0\n"))
	require.NoError(t, err)
	return []byte(prov)
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// helmChart is the chart web-1.0.0.tgz of shop whose provenance file is
// prov, or the failure err.
func helmChart(archive, prov []byte, err error, calls *int) HelmChart {
	return HelmChart{
		Namespace: "shop", URL: "https://charts.example/charts/web-1.0.0.tgz", Digest: digestOf(archive), Archive: archive,
		Where: "https://charts.example chart web 1.0.0",
		Provenance: func(context.Context) ([]byte, error) {
			*calls++
			return prov, err
		},
	}
}

func helmSpec(secret string) *convoyv1alpha1.HelmVerification {
	return &convoyv1alpha1.HelmVerification{Provider: ProviderHelm, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secret}}
}

func helmCount(t *testing.T, outcome string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(verifications.WithLabelValues(ProviderHelm, outcome))
	require.NoError(t, err)
	return v
}

// A chart verifies by a provenance file signed by a key of the Secret over
// exactly its archive; every other case is SignatureUnverified and says
// what was expected and found; a failure of the repository keeps its
// reason.
func TestVerifyHelm(t *testing.T) {
	RegisterMetrics()
	alice, mallory := newHelmSigner(t, "Alice"), newHelmSigner(t, "Mallory")
	archive, other := []byte("chart web 1.0.0"), []byte("chart web 2.0.0")
	prov := alice.sign(t, archive, "web-1.0.0.tgz")
	tampered := bytes.Replace(prov, []byte(digestOf(archive)), []byte(digestOf(other)), 1)
	require.NotEqual(t, prov, tampered)
	sshPub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sshKey, err := ssh.NewPublicKey(sshPub)
	require.NoError(t, err)
	many := map[string][]byte{}
	for i := range 1000 {
		many[fmt.Sprintf("k%d.asc", i)] = alice.public
	}
	repoDown := failure.New("SourceUnreachable", errors.New("503"), "the repository failed")
	for _, tc := range []struct {
		name    string
		secret  string
		archive []byte
		prov    []byte
		err     error
		// reason is the failure's reason ("": verified), says what its
		// message holds.
		reason string
		says   []string
	}{
		{name: "signed", secret: "keys", archive: archive, prov: prov},
		{name: "signed, among other keys", secret: "both", archive: archive, prov: prov},
		{name: "no provenance file", secret: "keys", archive: archive, err: failure.New(ReasonSignatureUnverified, nil, "the repository has no provenance file (404)"),
			reason: ReasonSignatureUnverified, says: []string{"https://charts.example chart web 1.0.0: the repository has no provenance file (404)"}},
		{name: "an unknown key", secret: "keys", archive: archive, prov: mallory.sign(t, archive, "web-1.0.0.tgz"), reason: ReasonSignatureUnverified,
			says: []string{"is signed by the OpenPGP key " + fmt.Sprintf("%X", mallory.entity.PrimaryKey.Fingerprint), "which is not in the key Secret (1 OpenPGP keys): unknown key"}},
		{name: "another archive's digest", secret: "keys", archive: other, prov: prov, reason: ReasonSignatureUnverified,
			says: []string{"web-1.0.0.tgz.prov signs " + digestOf(archive) + " for web-1.0.0.tgz, and the chart archive is " + digestOf(other) + ": it signs another archive"}},
		{name: "another file name", secret: "keys", archive: archive, prov: alice.sign(t, archive, "web-9.tgz"), reason: ReasonSignatureUnverified,
			says: []string{"signs no file web-1.0.0.tgz, the chart archive's name (it signs web-9.tgz)"}},
		{name: "tampered", secret: "keys", archive: other, prov: tampered, reason: ReasonSignatureUnverified,
			says: []string{"does not verify its signed message (tampered, or signed over another message): bad signature"}},
		{name: "not clear-signed", secret: "keys", archive: archive, prov: []byte("name: web\n...\nfiles: {}\n"), reason: ReasonSignatureUnverified,
			says: []string{"holds no OpenPGP clear-signed message", "malformed"}},
		{name: "larger than the limit", secret: "keys", archive: archive, prov: append(bytes.Clone(prov), make([]byte, MaxProvenanceBytes)...), reason: ReasonSignatureUnverified,
			says: []string{"more than the limit of 65536 bytes"}},
		{name: "no Secret", secret: "absent", archive: archive, prov: prov, reason: ReasonSignatureUnverified,
			says: []string{"verify.secretRef Secret shop/absent not found: nothing to verify with"}},
		{name: "1,000 keys", secret: "many", archive: archive, prov: prov, reason: ReasonSignatureUnverified,
			says: []string{"the key Secret has 1000 entries, more than the limit of 256 keys"}},
		{name: "SSH keys only", secret: "ssh", archive: archive, prov: prov, reason: ReasonSignatureUnverified,
			says: []string{"holds no OpenPGP public key (armored, in a key ending .asc)"}},
		{name: "the repository failing", secret: "keys", archive: archive, err: repoDown, reason: "SourceUnreachable", says: []string{"the repository failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fetcher{secrets: map[string]map[string][]byte{
				"keys": {"release.asc": alice.public}, "both": {"a.asc": mallory.public, "release.asc": alice.public},
				"many": many, "ssh": {"ci.pub": ssh.MarshalAuthorizedKey(sshKey)},
			}}
			outcome := verifyVerified
			switch {
			case tc.reason == ReasonSignatureUnverified:
				outcome = verifyUnverified
			case tc.reason != "":
				outcome = verifyFailure
			}
			before := helmCount(t, outcome)
			calls := 0
			sig, err := New(Options{}).VerifyHelm(context.Background(), f, helmChart(tc.archive, tc.prov, tc.err, &calls), helmSpec(tc.secret))
			assert.Equal(t, before+1, helmCount(t, outcome))
			if tc.reason != "" {
				assert.Equal(t, tc.reason, failure.ReasonOf(err), "%v", err)
				for _, s := range tc.says {
					assert.ErrorContains(t, err, s)
				}
				t.Log(err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, ProviderHelm, sig.Provider)
			assert.Equal(t, "openpgp", sig.Format)
			assert.Equal(t, "release.asc", sig.Key)
			assert.Equal(t, fmt.Sprintf("%X", alice.entity.PrimaryKey.Fingerprint), sig.Fingerprint)
			assert.Len(t, sig.Fingerprint, 40)
			assert.Equal(t, fmt.Sprintf("%016X", alice.entity.PrimaryKey.KeyId), sig.KeyID)
			assert.Equal(t, "Alice <alice@example.com>", sig.Identity)
			assert.Equal(t, LayoutProv, sig.Layout)
		})
	}

	_, err = New(Options{}).VerifyHelm(context.Background(), &fetcher{}, helmChart(archive, prov, nil, new(int)),
		&convoyv1alpha1.HelmVerification{Provider: "cosign", SecretRef: convoyv1alpha1.LocalObjectReference{Name: "keys"}})
	assert.ErrorIs(t, err, ErrUnknownHelmProvider)
}

// A verdict is kept by namespace, chart URL, digest and keys: a signature
// for MaxAge, a SignatureUnverified for UnverifiedMaxAge (not for a
// refresh after it was read); another namespace or another key set reads
// the provenance file again; a failure of the repository is not kept.
func TestVerifyHelmVerdict(t *testing.T) {
	ctx := context.Background()
	alice, bob := newHelmSigner(t, "Alice"), newHelmSigner(t, "Bob")
	archive := []byte("chart web 1.0.0")
	prov := alice.sign(t, archive, "web-1.0.0.tgz")
	clk := clocktesting.NewFakePassiveClock(time.Now())
	v := New(Options{MaxAge: time.Minute, Clock: clk})
	f := &fetcher{secrets: map[string]map[string][]byte{"alice": {"alice.asc": alice.public}, "bob": {"bob.asc": bob.public}}}
	calls := 0
	chart := helmChart(archive, prov, nil, &calls)
	verifyAs := func(c HelmChart, secret string) error {
		_, err := v.VerifyHelm(ctx, f, c, helmSpec(secret))
		return err
	}

	require.NoError(t, verifyAs(chart, "alice"))
	require.NoError(t, verifyAs(chart, "alice"))
	assert.Equal(t, 1, calls, "the verdict is kept")
	elsewhere := chart
	elsewhere.Namespace = "other"
	require.NoError(t, verifyAs(elsewhere, "alice"))
	assert.Equal(t, 2, calls, "never a verdict of another namespace")
	assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(verifyAs(chart, "bob")), "another key set verifies again")
	assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(verifyAs(chart, "bob")))
	assert.Equal(t, 3, calls, "its SignatureUnverified is kept")
	fresh := chart
	fresh.Since = clk.Now().Add(time.Millisecond)
	assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(verifyAs(fresh, "bob")))
	assert.Equal(t, 4, calls, "a refresh after it was read reads again")
	clk.SetTime(clk.Now().Add(UnverifiedMaxAge))
	require.NoError(t, verifyAs(chart, "alice"))
	assert.Equal(t, 4, calls, "a signature is kept for MaxAge")
	assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(verifyAs(chart, "bob")))
	assert.Equal(t, 5, calls, "a SignatureUnverified for UnverifiedMaxAge")
	clk.SetTime(clk.Now().Add(time.Minute))
	require.NoError(t, verifyAs(chart, "alice"))
	assert.Equal(t, 6, calls, "past MaxAge")

	down := helmChart(archive, nil, failure.New("SourceUnreachable", nil, "503"), &calls)
	down.URL += "?down"
	for range 2 {
		assert.Equal(t, "SourceUnreachable", failure.ReasonOf(verifyAs(down, "alice")))
	}
	assert.Equal(t, 8, calls, "a failure of the repository is not kept")
}
