package cosigner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pushed starts a registry on loopback and pushes a random image to it.
func pushed(t *testing.T, referrers bool) (name.Digest, []remote.Option) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(referrers), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	opts := []remote.Option{remote.WithTransport(srv.Client().Transport)}
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	tag, err := name.NewTag(strings.TrimPrefix(srv.URL, "http://")+"/app:v1", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img, opts...))
	d, err := img.Digest()
	require.NoError(t, err)
	return tag.Context().Digest(d.String()), opts
}

func TestGenerateKey(t *testing.T) {
	priv, pubPEM, err := GenerateKey()
	require.NoError(t, err)
	block, rest := pem.Decode(pubPEM)
	require.NotNil(t, block)
	assert.Empty(t, rest)
	assert.Equal(t, "PUBLIC KEY", block.Type)
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	require.NoError(t, err)
	ec, ok := pub.(*ecdsa.PublicKey)
	require.True(t, ok)
	assert.Equal(t, elliptic.P256(), ec.Curve)
	assert.True(t, ec.Equal(priv.Public()))
}

func TestSignTag(t *testing.T) {
	ctx := context.Background()
	ref, opts := pushed(t, true)
	priv, _, err := GenerateKey()
	require.NoError(t, err)
	require.NoError(t, SignTag(ctx, ref, priv, opts...))
	require.NoError(t, SignTag(ctx, ref, priv, opts...)) // appends

	assert.Equal(t, "sha256-"+strings.TrimPrefix(ref.DigestStr(), "sha256:")+".sig", SigTag(ref).TagStr())
	img, err := remote.Image(SigTag(ref), opts...)
	require.NoError(t, err)
	m, err := img.Manifest()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, m.MediaType)
	assert.Equal(t, types.OCIConfigJSON, m.Config.MediaType)
	require.Len(t, m.Layers, 2)
	want := `{"critical":{"identity":{"docker-reference":"` + ref.Context().Name() + `"},"image":{"docker-manifest-digest":"` +
		ref.DigestStr() + `"},"type":"cosign container image signature"},"optional":null}`
	for _, l := range m.Layers {
		assert.Equal(t, types.MediaType(SimpleSigningMediaType), l.MediaType)
		assert.NotEmpty(t, l.Annotations[SignatureAnnotation])
		layer, err := img.LayerByDigest(l.Digest)
		require.NoError(t, err)
		rc, err := layer.Compressed()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, want, string(data))
	}
	assert.NotEqual(t, m.Layers[0].Annotations, m.Layers[1].Annotations, "two signatures")
}

func TestSignReferrer(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "tag schema"}[referrers], func(t *testing.T) {
			ctx := context.Background()
			ref, opts := pushed(t, referrers)
			priv, _, err := GenerateKey()
			require.NoError(t, err)
			require.NoError(t, SignReferrer(ctx, ref, priv, opts...))

			idx, err := remote.Referrers(ref, opts...)
			require.NoError(t, err)
			im, err := idx.IndexManifest()
			require.NoError(t, err)
			require.Len(t, im.Manifests, 1)
			assert.Equal(t, SignPredicateType, im.Manifests[0].Annotations["dev.sigstore.bundle.predicateType"])
			if !referrers {
				// Written by go-containerregistry to the sha256-<hex> tag.
				assert.Equal(t, BundleMediaType, im.Manifests[0].ArtifactType)
			}

			desc, err := remote.Get(ref.Context().Digest(im.Manifests[0].Digest.String()), opts...)
			require.NoError(t, err)
			var m v1.Manifest
			require.NoError(t, json.Unmarshal(desc.Manifest, &m))
			assert.Equal(t, BundleMediaType, m.ArtifactType)
			assert.Equal(t, types.MediaType(emptyMediaType), m.Config.MediaType)
			require.NotNil(t, m.Subject)
			assert.Equal(t, ref.DigestStr(), m.Subject.Digest.String())
			require.Len(t, m.Layers, 1)
			assert.Equal(t, types.MediaType(BundleMediaType), m.Layers[0].MediaType)

			layer, err := remote.Layer(ref.Context().Digest(m.Layers[0].Digest.String()), opts...)
			require.NoError(t, err)
			rc, err := layer.Compressed()
			require.NoError(t, err)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			var b bundle.Bundle
			require.NoError(t, b.UnmarshalJSON(data), "sigstore-go's validation")
			v, err := b.Version()
			require.NoError(t, err)
			assert.Equal(t, "v0.3", v)
			assert.Empty(t, b.GetVerificationMaterial().GetTlogEntries())
			assert.NotEmpty(t, b.GetVerificationMaterial().GetPublicKey().GetHint())
			env := b.GetDsseEnvelope()
			require.NotNil(t, env)
			assert.Equal(t, "application/vnd.in-toto+json", env.GetPayloadType())
			var st struct {
				PredicateType string `json:"predicateType"`
				Subject       []struct {
					Digest map[string]string `json:"digest"`
				} `json:"subject"`
			}
			require.NoError(t, json.Unmarshal(env.GetPayload(), &st))
			assert.Equal(t, SignPredicateType, st.PredicateType)
			require.Len(t, st.Subject, 1)
			assert.Equal(t, ref.DigestStr(), "sha256:"+st.Subject[0].Digest["sha256"])
		})
	}
}

func TestMessageBundle(t *testing.T) {
	priv, _, err := GenerateKey()
	require.NoError(t, err)
	h := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	data, err := MessageBundle(h, priv)
	require.NoError(t, err)
	var b bundle.Bundle
	require.NoError(t, b.UnmarshalJSON(data))
	assert.Equal(t, strings.Repeat("\xab", 32), string(b.GetMessageSignature().GetMessageDigest().GetDigest()))

	_, err = MessageBundle(v1.Hash{Algorithm: "sha512", Hex: "00"}, priv)
	assert.Error(t, err)
}
