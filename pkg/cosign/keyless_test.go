package cosign_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
)

const (
	ghIssuer  = "https://token.actions.githubusercontent.com"
	ghSubject = "https://github.com/kumodo/web/.github/workflows/release.yaml@refs/heads/main"
)

func newSigstore(t *testing.T) *cosigner.Sigstore {
	t.Helper()
	s, err := cosigner.NewSigstore()
	require.NoError(t, err)
	return s
}

func keylessPolicy(t *testing.T, s *cosigner.Sigstore, ro cosigner.RootOptions, ids ...cosign.Identity) *cosign.Keyless {
	t.Helper()
	data, err := s.TrustedRoot(ro)
	require.NoError(t, err)
	tr, err := cosign.ParseTrustRoot(data)
	require.NoError(t, err)
	if len(ids) == 0 {
		ids = []cosign.Identity{{Issuer: ghIssuer, Subject: `https://github\.com/kumodo/web/\.github/workflows/release\.yaml@refs/heads/main`}}
	}
	k, err := cosign.NewKeyless(tr, ids)
	require.NoError(t, err)
	return k
}

func TestVerifyKeyless(t *testing.T) {
	ctx := context.Background()
	ours := newSigstore(t)
	other := newSigstore(t)
	type signFunc func(t *testing.T, reg *testRegistry, ref name.Digest)
	signTag := func(s *cosigner.Sigstore, issuer, subject string, ev cosigner.Evidence) signFunc {
		return func(t *testing.T, reg *testRegistry, ref name.Digest) {
			require.NoError(t, s.SignTag(ctx, ref, issuer, subject, ev, reg.options()...))
		}
	}
	signReferrer := func(s *cosigner.Sigstore, issuer, subject string, ev cosigner.Evidence) signFunc {
		return func(t *testing.T, reg *testRegistry, ref name.Digest) {
			require.NoError(t, s.SignReferrer(ctx, ref, issuer, subject, ev, reg.options()...))
		}
	}
	cases := []struct {
		name   string
		sign   []signFunc
		root   cosigner.RootOptions
		ids    []cosign.Identity
		layout string
		kind   cosign.Kind
		msg    []string
	}{
		{name: "tag layout, valid identity", sign: []signFunc{signTag(ours, ghIssuer, ghSubject, cosigner.Evidence{})}, layout: cosign.LayoutTag},
		{name: "referrer layout, valid identity", sign: []signFunc{signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{})}, layout: cosign.LayoutReferrer},
		{name: "identity among several, subject by expression", sign: []signFunc{signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{})},
			ids: []cosign.Identity{{Issuer: "https://gitlab.com", Subject: ".*"}, {Issuer: ghIssuer, Subject: `https://github\.com/kumodo/.+@refs/heads/main`}}, layout: cosign.LayoutReferrer},
		{name: "tag layout, wrong issuer", sign: []signFunc{signTag(ours, "https://accounts.example.com", ghSubject, cosigner.Evidence{})},
			kind: cosign.KindWrongIdentity, msg: []string{`found issuer "https://accounts.example.com"`, `subject "` + ghSubject}},
		{name: "referrer layout, wrong subject", sign: []signFunc{signReferrer(ours, ghIssuer, "https://github.com/evil/web/.github/workflows/x.yaml@refs/heads/main", cosigner.Evidence{})},
			kind: cosign.KindWrongIdentity, msg: []string{"none by an expected identity", "evil/web"}},
		{name: "expressions are anchored: a subject that contains the expected one", sign: []signFunc{signReferrer(ours, ghIssuer, "https://evil.example/?"+ghSubject, cosigner.Evidence{})},
			kind: cosign.KindWrongIdentity},
		{name: "issuer anchored too", sign: []signFunc{signTag(ours, ghIssuer+".evil.example", ghSubject, cosigner.Evidence{})},
			kind: cosign.KindWrongIdentity},
		{name: "tag layout, certificate of another root", sign: []signFunc{signTag(other, ghIssuer, ghSubject, cosigner.Evidence{})},
			kind: cosign.KindUntrusted, msg: []string{"none verifies against the trusted root", "an entry of one of its transparency logs", "issuer \"" + ghIssuer}},
		{name: "referrer layout, certificate of another root", sign: []signFunc{signReferrer(other, ghIssuer, ghSubject, cosigner.Evidence{})},
			kind: cosign.KindUntrusted},
		{name: "certificate of an authority the root does not list", sign: []signFunc{signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{})},
			root: cosigner.RootOptions{CAOf: other}, kind: cosign.KindUntrusted, msg: []string{"does not chain to a certificate authority of the trusted root"}},
		{name: "tag layout, certificate of an authority the root does not list", sign: []signFunc{signTag(ours, ghIssuer, ghSubject, cosigner.Evidence{})},
			root: cosigner.RootOptions{CAOf: other}, kind: cosign.KindUntrusted, msg: []string{"does not chain to a certificate authority of the trusted root"}},
		{name: "tag layout, log entry missing", sign: []signFunc{signTag(ours, ghIssuer, ghSubject, cosigner.Evidence{NoLogEntry: true})},
			kind: cosign.KindUntrusted, msg: []string{"no valid entry of a transparency log of the trusted root"}},
		{name: "referrer layout, log entry missing", sign: []signFunc{signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{NoLogEntry: true})},
			kind: cosign.KindUntrusted},
		{name: "root of timestamps only: a signed timestamp suffices", sign: []signFunc{signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{NoLogEntry: true})},
			root: cosigner.RootOptions{NoLog: true}, layout: cosign.LayoutReferrer},
		{name: "root of timestamps only, tag layout", sign: []signFunc{signTag(ours, ghIssuer, ghSubject, cosigner.Evidence{NoLogEntry: true})},
			root: cosigner.RootOptions{NoLog: true}, layout: cosign.LayoutTag},
		{name: "root of timestamps only, expired certificate without a timestamp", sign: []signFunc{signTag(ours, ghIssuer, ghSubject, cosigner.Evidence{NoTimestamp: true})},
			root: cosigner.RootOptions{NoLog: true}, kind: cosign.KindUntrusted, msg: []string{"a signed timestamp of one of its timestamping authorities", "no valid timestamp of the trusted root dates the signature"}},
		{name: "a root of log only: the log entry's time suffices", sign: []signFunc{signTag(ours, ghIssuer, ghSubject, cosigner.Evidence{NoTimestamp: true})},
			root: cosigner.RootOptions{NoTimestamps: true}, layout: cosign.LayoutTag},
		{name: "a root of log only, a signature timestamped by an authority it does not list", sign: []signFunc{signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{})},
			root: cosigner.RootOptions{NoTimestamps: true}, layout: cosign.LayoutReferrer},
		{name: "wrong identity and another root: the identity is what to fix", sign: []signFunc{
			signTag(other, ghIssuer, ghSubject, cosigner.Evidence{}), signReferrer(ours, "https://gitlab.com", "group/project", cosigner.Evidence{})},
			kind: cosign.KindWrongIdentity, msg: []string{`issuer "https://gitlab.com"`}},
		{name: "a bad one, then a good one", sign: []signFunc{
			signTag(other, ghIssuer, ghSubject, cosigner.Evidence{}), signReferrer(ours, ghIssuer, ghSubject, cosigner.Evidence{})}, layout: cosign.LayoutReferrer},
		{name: "no signature", kind: cosign.KindNoSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t, true)
			ref := reg.push(t, "web", "v1")
			for _, sign := range tc.sign {
				sign(t, reg, ref)
			}
			k := keylessPolicy(t, ours, tc.root, tc.ids...)
			signer, err := cosign.VerifyKeyless(ctx, reg.puller(t), ref, k, cosign.Limits{})
			if tc.kind != 0 {
				require.Error(t, err)
				var e *cosign.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tc.kind.String(), e.Kind.String(), e.Message)
				for _, m := range tc.msg {
					assert.Contains(t, e.Message, m)
				}
				assert.NotContains(t, e.Message, "\n")
				t.Log(e.Message)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.layout, signer.Layout)
			assert.Equal(t, ghIssuer, signer.Issuer)
			assert.Equal(t, ghSubject, signer.Subject)
			assert.Empty(t, signer.Key)
		})
	}
}

func TestVerifyKeylessOtherDigest(t *testing.T) {
	ctx := context.Background()
	s := newSigstore(t)
	for _, layout := range []string{cosign.LayoutTag, cosign.LayoutReferrer} {
		t.Run(layout, func(t *testing.T) {
			reg := newRegistry(t, true)
			ref := reg.push(t, "web", "v1")
			other := reg.push(t, "web", "v2")
			// Signed other's digest; the signature copied to ref.
			if layout == cosign.LayoutTag {
				require.NoError(t, s.SignTag(ctx, other, ghIssuer, ghSubject, cosigner.Evidence{}, reg.options()...))
				copyTag(t, reg, other, ref)
			} else {
				data, err := s.Bundle(other, ghIssuer, ghSubject, cosigner.Evidence{})
				require.NoError(t, err)
				require.NoError(t, cosigner.AttachReferrer(ctx, ref, data, reg.options()...))
			}
			_, err := cosign.VerifyKeyless(ctx, reg.puller(t), ref, keylessPolicy(t, s, cosigner.RootOptions{}), cosign.Limits{})
			var e *cosign.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, cosign.KindOtherDigest, e.Kind, e.Message)
			assert.Contains(t, e.Message, other.DigestStr())
			assert.Contains(t, e.Message, "the certificate of issuer")
		})
	}
}

// A keyed signature does not satisfy a keyless policy, nor a keyless one a
// keyed policy.
func TestVerifyKeylessAndKeysApart(t *testing.T) {
	ctx := context.Background()
	s := newSigstore(t)
	reg := newRegistry(t, true)
	ref := reg.push(t, "web", "v1")
	priv, pubPEM, err := cosigner.GenerateKey()
	require.NoError(t, err)
	require.NoError(t, cosigner.SignReferrer(ctx, ref, priv, reg.options()...))
	require.NoError(t, cosigner.SignTag(ctx, ref, priv, reg.options()...))
	_, err = cosign.VerifyKeyless(ctx, reg.puller(t), ref, keylessPolicy(t, s, cosigner.RootOptions{}), cosign.Limits{})
	var e *cosign.Error
	require.ErrorAs(t, err, &e)
	assert.NotEqual(t, cosign.KindRegistry, e.Kind, e.Message)

	ref2 := reg.push(t, "web", "v2")
	require.NoError(t, s.SignReferrer(ctx, ref2, ghIssuer, ghSubject, cosigner.Evidence{}, reg.options()...))
	require.NoError(t, s.SignTag(ctx, ref2, ghIssuer, ghSubject, cosigner.Evidence{}, reg.options()...))
	keys, err := cosign.ParseKeys(map[string][]byte{"ci.pub": pubPEM})
	require.NoError(t, err)
	_, err = cosign.Verify(ctx, reg.puller(t), ref2, keys, cosign.Limits{})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, cosign.KindWrongKey, e.Kind, e.Message)
}

func TestParseTrustRoot(t *testing.T) {
	s := newSigstore(t)
	good, err := s.TrustedRoot(cosigner.RootOptions{})
	require.NoError(t, err)
	empty, err := s.TrustedRoot(cosigner.RootOptions{NoLog: true, NoTimestamps: true})
	require.NoError(t, err)
	cases := []struct {
		name string
		data []byte
		msg  string
	}{
		{"valid", good, ""},
		{"not JSON", []byte("{"), "not a Sigstore trusted_root.json"},
		{"another media type", []byte(`{"mediaType":"application/json"}`), "not a Sigstore trusted_root.json"},
		{"neither log nor timestamping authority", empty, "neither a transparency log nor a timestamping authority"},
		{"too large", []byte(strings.Repeat(" ", cosign.MaxTrustRootBytes+1)), "more than the limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := cosign.ParseTrustRoot(tc.data)
			if tc.msg == "" {
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(tr.Digest(), "sha256:"))
				return
			}
			var e *cosign.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, cosign.KindInvalid, e.Kind)
			assert.Contains(t, e.Message, tc.msg)
		})
	}
}

func TestNewKeyless(t *testing.T) {
	s := newSigstore(t)
	data, err := s.TrustedRoot(cosigner.RootOptions{})
	require.NoError(t, err)
	tr, err := cosign.ParseTrustRoot(data)
	require.NoError(t, err)
	many := make([]cosign.Identity, cosign.MaxIdentities+1)
	for i := range many {
		many[i] = cosign.Identity{Issuer: "a", Subject: "b"}
	}
	cases := []struct {
		name string
		ids  []cosign.Identity
		msg  string
	}{
		{"none", nil, "no identity"},
		{"too many", many, "more than the limit"},
		{"empty issuer", []cosign.Identity{{Subject: "x"}}, "an empty expression"},
		{"bad subject", []cosign.Identity{{Issuer: "x", Subject: "("}}, "not a regular expression"},
		{"too long", []cosign.Identity{{Issuer: "x", Subject: strings.Repeat("a", cosign.MaxPatternLength+1)}}, "more than the limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cosign.NewKeyless(tr, tc.ids)
			var e *cosign.Error
			require.ErrorAs(t, err, &e)
			assert.Contains(t, e.Message, tc.msg)
		})
	}
	a, err := cosign.NewKeyless(tr, []cosign.Identity{{Issuer: "a", Subject: "bc"}})
	require.NoError(t, err)
	b, err := cosign.NewKeyless(tr, []cosign.Identity{{Issuer: "ab", Subject: "c"}})
	require.NoError(t, err)
	assert.NotEqual(t, a.Digest(), b.Digest(), "identities that join alike differ in the digest")
}

// copyTag copies the signature tag of from to the one of to.
func copyTag(t *testing.T, reg *testRegistry, from, to name.Digest) {
	t.Helper()
	img, err := remote.Image(cosigner.SigTag(from), reg.options()...)
	require.NoError(t, err)
	require.NoError(t, remote.Write(cosigner.SigTag(to), img, reg.options()...))
}
