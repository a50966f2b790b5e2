package cosign_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
)

func pemOf(t *testing.T, priv crypto.Signer) []byte {
	t.Helper()
	data, err := cosigner.PublicKeyPEM(priv)
	require.NoError(t, err)
	return data
}

func TestParseKeys(t *testing.T) {
	a, aPEM, err := cosigner.GenerateKey()
	require.NoError(t, err)
	b, bPEM, err := cosigner.GenerateKey()
	require.NoError(t, err)
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	require.NoError(t, err)
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not really")})
	many := map[string][]byte{}
	for i := range cosign.MaxKeys + 1 {
		many[fmt.Sprintf("k%02d.pub", i)] = aPEM
	}

	cases := []struct {
		name  string
		data  map[string][]byte
		want  []cosign.KeyInfo // nil: an error
		error []string
	}{
		{name: "none", data: nil, error: []string{"no public key"}},
		{name: "no .pub entry", data: map[string][]byte{"cosign.key": aPEM, "ci.pem": aPEM}, error: []string{"no public key", "*.pub"}},
		{name: "not PEM", data: map[string][]byte{"ci.pub": []byte("garbage")}, error: []string{"ci.pub", "not a PEM block"}},
		{name: "empty", data: map[string][]byte{"ci.pub": nil}, error: []string{"ci.pub", "not a PEM block"}},
		{name: "PEM of a certificate", data: map[string][]byte{"ci.pub": cert}, error: []string{"ci.pub", `"CERTIFICATE", not PUBLIC KEY`}},
		{name: "malformed key", data: map[string][]byte{"ci.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}})}, error: []string{"ci.pub", "not a public key"}},
		{name: "two PEM blocks in one entry", data: map[string][]byte{"ci.pub": append(append([]byte{}, aPEM...), bPEM...)}, error: []string{"ci.pub", "more than one PEM block"}},
		{name: "ECDSA P-521", data: map[string][]byte{"ok.pub": aPEM, "p521.pub": pemOf(t, p521)}, error: []string{"p521.pub", "P-521", "only P-256 and P-384"}},
		{name: "RSA 1024", data: map[string][]byte{"rsa.pub": pemOf(t, rsa1024)}, error: []string{"rsa.pub", "1024 bits"}},
		{name: "more than MaxKeys", data: many, error: []string{"33 public keys", "limit of 32"}},
		{
			name: "one key",
			data: map[string][]byte{"ci.pub": aPEM},
			want: []cosign.KeyInfo{{Name: "ci.pub", Fingerprint: fingerprint(t, a.Public())}},
		},
		{
			name: "two keys, sorted by name; other entries ignored",
			data: map[string][]byte{"z.pub": aPEM, "b.pub": bPEM, "cosign.key": []byte("junk"), "cosign.password": []byte("junk")},
			want: []cosign.KeyInfo{{Name: "b.pub", Fingerprint: fingerprint(t, b.Public())}, {Name: "z.pub", Fingerprint: fingerprint(t, a.Public())}},
		},
		{
			name: "a PEM with text around it",
			data: map[string][]byte{"ci.pub": append([]byte("# the CI key\n"), append(aPEM, '\n', '\n')...)},
			want: []cosign.KeyInfo{{Name: "ci.pub", Fingerprint: fingerprint(t, a.Public())}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := cosign.ParseKeys(tc.data)
			if tc.want == nil {
				require.Error(t, err)
				var cerr *cosign.Error
				require.ErrorAs(t, err, &cerr)
				assert.Equal(t, cosign.KindInvalid, cerr.Kind)
				for _, m := range tc.error {
					assert.Contains(t, err.Error(), m)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, keys.Keys())
			assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, keys.Digest())
		})
	}
}

func TestKeysDigest(t *testing.T) {
	_, aPEM, err := cosigner.GenerateKey()
	require.NoError(t, err)
	_, bPEM, err := cosigner.GenerateKey()
	require.NoError(t, err)
	digest := func(data map[string][]byte) string {
		keys, err := cosign.ParseKeys(data)
		require.NoError(t, err)
		return keys.Digest()
	}
	base := digest(map[string][]byte{"a.pub": aPEM, "b.pub": bPEM})
	for i := range 10 { // whatever the map's order
		assert.Equal(t, base, digest(map[string][]byte{"b.pub": bPEM, "a.pub": aPEM, fmt.Sprintf("x%d", i): nil}))
	}
	assert.NotEqual(t, base, digest(map[string][]byte{"a.pub": aPEM}), "a key less")
	assert.NotEqual(t, base, digest(map[string][]byte{"a.pub": bPEM, "b.pub": aPEM}), "keys swapped between names")
	assert.NotEqual(t, base, digest(map[string][]byte{"a.pub": aPEM, "c.pub": bPEM}), "a key renamed")
}
