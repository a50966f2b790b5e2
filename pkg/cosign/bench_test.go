package cosign_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
)

// BenchmarkVerify compares, in one run, a verification with a key and
// keyless ones (the certificate chain, the log entry's signed timestamp,
// the RFC 3161 timestamp, the identity) against go-containerregistry's
// registry on loopback, with the registry requests of each; and the parse
// of a trust root, which the source's cache saves on every verification of
// the same Secret.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	reg := newRegistry(b, true)
	priv, pub, err := cosigner.GenerateKey()
	require.NoError(b, err)
	keys, err := cosign.ParseKeys(map[string][]byte{"ci.pub": pub})
	require.NoError(b, err)
	ss, err := cosigner.NewSigstore()
	require.NoError(b, err)
	rootJSON, err := ss.TrustedRoot(cosigner.RootOptions{})
	require.NoError(b, err)
	trust, err := cosign.ParseTrustRoot(rootJSON)
	require.NoError(b, err)
	keyless, err := cosign.NewKeyless(trust, []cosign.Identity{{Issuer: ghIssuer, Subject: `https://github\.com/kumodo/.+`}})
	require.NoError(b, err)

	keyed := reg.push(b, "keyed", "v1")
	require.NoError(b, cosigner.SignReferrer(ctx, keyed, priv, reg.options()...))
	bundled := reg.push(b, "keyless-referrer", "v1")
	require.NoError(b, ss.SignReferrer(ctx, bundled, ghIssuer, ghSubject, cosigner.Evidence{}, reg.options()...))
	tagged := reg.push(b, "keyless-tag", "v1")
	require.NoError(b, ss.SignTag(ctx, tagged, ghIssuer, ghSubject, cosigner.Evidence{}, reg.options()...))
	puller := reg.puller(b)

	run := func(b *testing.B, verify func() (*cosign.Signer, error)) {
		reg.reset()
		for b.Loop() {
			if _, err := verify(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(reg.count("", ""))/float64(b.N), "requests/op")
	}
	b.Run("key/referrer", func(b *testing.B) {
		run(b, func() (*cosign.Signer, error) { return cosign.Verify(ctx, puller, keyed, keys, cosign.Limits{}) })
	})
	b.Run("keyless/referrer", func(b *testing.B) {
		run(b, func() (*cosign.Signer, error) {
			return cosign.VerifyKeyless(ctx, puller, bundled, keyless, cosign.Limits{})
		})
	})
	b.Run("keyless/tag", func(b *testing.B) {
		run(b, func() (*cosign.Signer, error) {
			return cosign.VerifyKeyless(ctx, puller, tagged, keyless, cosign.Limits{})
		})
	})
	b.Run("parse-trust-root", func(b *testing.B) {
		for b.Loop() {
			if _, err := cosign.ParseTrustRoot(rootJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
}
