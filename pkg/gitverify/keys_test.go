package gitverify

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKeys(t *testing.T) {
	alice, bob := newPGP(t, "Alice", "alice@example.com"), newPGP(t, "Bob", "bob@example.com")
	ed := newSSH(t, "ed25519")
	many := func(n int) []byte {
		var b strings.Builder
		for range n {
			b.WriteString(authorizedLine(newSSH(t, "ed25519")) + "\n")
		}
		return []byte(b.String())
	}
	thousand := map[string][]byte{}
	for i := range 1000 {
		thousand[fmt.Sprintf("key-%d.pub", i)] = []byte("not parsed")
	}
	private := func() []byte {
		var b bytes.Buffer
		w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
		require.NoError(t, err)
		require.NoError(t, alice.SerializePrivate(w, nil))
		require.NoError(t, w.Close())
		return b.Bytes()
	}

	tests := []struct {
		name     string
		data     map[string][]byte
		limits   Limits
		keys     int
		contains string
	}{
		{name: "a key ring in one block", data: map[string][]byte{"team.asc": armoredPublic(t, alice, bob)}, keys: 2},
		{name: "two blocks in one key", data: map[string][]byte{"team.asc": append(armoredPublic(t, alice), armoredPublic(t, bob)...)}, keys: 2},
		{name: "OpenPGP and SSH", data: map[string][]byte{"alice.asc": armoredPublic(t, alice), "ed.pub": []byte(authorizedLine(ed))}, keys: 2},
		{name: "an allowed_signers line for another namespace is left out",
			data: map[string][]byte{"allowed_signers": []byte("a@x namespaces=\"file\" " + authorizedLine(ed) + "\nb@x " + authorizedLine(ed) + "\n")}, keys: 1},
		{name: "1,000 entries refused before parsing", data: thousand, contains: "1000 entries, more than the limit of 256"},
		{name: "1,000 keys in one .pub refused before parsing", data: map[string][]byte{"team.pub": many(1000)}, contains: "more than the limit of 256 public keys (key team.pub lists 1000)"},
		{name: "past the keys' limit across entries", data: map[string][]byte{"a.pub": many(3), "b.pub": many(3)}, limits: Limits{Keys: 5},
			contains: "more than the limit of 5 public keys"},
		{name: "past the bytes limit", data: map[string][]byte{"a.pub": bytes.Repeat([]byte("#"), 2<<20)}, contains: "more than the limit of 1048576 bytes"},
		{name: "no key", data: map[string][]byte{"README": []byte("x")}, contains: "holds no public key"},
		{name: "an empty .pub", data: map[string][]byte{"a.pub": []byte("# nothing\n\n")}, contains: "lists no SSH public key"},
		{name: "a bad SSH line", data: map[string][]byte{"a.pub": []byte("ssh-ed25519 AAAA!!\n")}, contains: "key a.pub of the Secret, key 1"},
		{name: "an allowed_signers line without a key", data: map[string][]byte{"allowed_signers": []byte("alice@example.com\n")}, contains: "principal[,...]"},
		{name: "cert-authority", data: map[string][]byte{"allowed_signers": []byte("*@x cert-authority " + authorizedLine(ed) + "\n")}, contains: "cert-authority is not supported"},
		{name: "malformed armor", data: map[string][]byte{"a.asc": []byte(pgpBegin + "\n\n!!!\n-----END PGP PUBLIC KEY BLOCK-----\n")}, contains: "not an armored OpenPGP public key"},
		{name: "no armor", data: map[string][]byte{"a.asc": []byte("mQINBF...")}, contains: "holds no armored OpenPGP public key"},
		{name: "a private key", data: map[string][]byte{"a.asc": private()}, contains: "holds an OpenPGP private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKeys(tt.data, tt.limits)
			if tt.contains == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.keys, k.Len())
				assert.Len(t, k.Digest(), 64)
				return
			}
			require.Error(t, err)
			assert.Equal(t, KindInvalidKeys, kindOf(err))
			assert.Contains(t, err.Error(), tt.contains)
		})
	}
}

func TestKeysDigest(t *testing.T) {
	ed, other := newSSH(t, "ed25519"), newSSH(t, "ed25519")
	a := mustKeys(t, map[string][]byte{"a.pub": []byte(authorizedLine(ed)), "README": []byte("x")})
	b := mustKeys(t, map[string][]byte{"a.pub": []byte(authorizedLine(ed)), "README": []byte("y")})
	c := mustKeys(t, map[string][]byte{"a.pub": []byte(authorizedLine(other))})
	d := mustKeys(t, map[string][]byte{"b.pub": []byte(authorizedLine(ed))})
	assert.Equal(t, a.Digest(), b.Digest(), "what is not read is not in the digest")
	assert.NotEqual(t, a.Digest(), c.Digest())
	assert.NotEqual(t, a.Digest(), d.Digest(), "the key's name is in the verdict (Signer.Key)")
}
