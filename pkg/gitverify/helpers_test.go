package gitverify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // Git's object ids.
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/hiddeco/sshsig"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// tree is the tree id of the test commits (it need not exist).
const tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// pgpConfig makes ed25519 OpenPGP keys: fast, as gpg's default now.
var pgpConfig = &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}

// newPGP makes an OpenPGP key of name <email>.
func newPGP(t testing.TB, name, email string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", email, pgpConfig)
	require.NoError(t, err)
	return e
}

// armoredPublic is e's public key, armored, as gpg --export --armor.
func armoredPublic(t testing.TB, entities ...*openpgp.Entity) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	require.NoError(t, err)
	for _, e := range entities {
		require.NoError(t, e.Serialize(w))
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// signPGP is an armored detached signature of payload by e, as git's
// gpg.format=openpgp makes.
func signPGP(t testing.TB, e *openpgp.Entity, payload []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, openpgp.ArmoredDetachSign(&buf, e, bytes.NewReader(payload), nil))
	return append(buf.Bytes(), '\n')
}

var rsaOnce = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// newSSH makes an SSH key of kind ed25519, ecdsa or rsa (one RSA key for
// the whole test binary: it is slow to make).
func newSSH(t testing.TB, kind string) ssh.Signer {
	t.Helper()
	var key any
	switch kind {
	case "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		key = k
	case "ecdsa":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		key = k
	case "rsa":
		key = rsaOnce()
	default:
		t.Fatalf("kind %s", kind)
	}
	s, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	return s
}

// authorizedLine is s's public key as an authorized_keys line.
func authorizedLine(s ssh.Signer) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}

// signSSH is an armored SSH signature of payload by s in namespace, as
// `ssh-keygen -Y sign -n git` makes.
func signSSH(t testing.TB, s ssh.Signer, namespace string, payload []byte) []byte {
	t.Helper()
	sig, err := sshsig.Sign(bytes.NewReader(payload), s, sshsig.HashSHA512, namespace)
	require.NoError(t, err)
	return sshsig.Armor(sig)
}

// object is data as an Object of type kind, with its id.
func object(kind string, data []byte) Object {
	h := sha1.New() //nolint:gosec // Git's object ids.
	fmt.Fprintf(h, "%s %d\x00", kind, len(data))
	h.Write(data)
	return Object{ID: hex.EncodeToString(h.Sum(nil)), Data: data}
}

// commitPayload is an unsigned commit's content with message.
func commitPayload(message string) []byte {
	return []byte("tree " + tree + "\n" +
		"author Convoy Test <test@convoy.invalid> 1704067200 +0000\n" +
		"committer Convoy Test <test@convoy.invalid> 1704067200 +0000\n\n" + message)
}

// withGPGSig is the commit payload with sig in a gpgsig header, as git
// writes it: before the empty line, each line after the first indented.
func withGPGSig(payload, sig []byte) []byte {
	header, message, _ := bytes.Cut(payload, []byte("\n\n"))
	lines := strings.Split(strings.TrimSuffix(string(sig), "\n"), "\n")
	return []byte(string(header) + "\ngpgsig " + strings.Join(lines, "\n ") + "\n\n" + string(message))
}

// signedCommit is a commit with message signed by sign.
func signedCommit(message string, sign func([]byte) []byte) Object {
	p := commitPayload(message)
	return object(typeCommit, withGPGSig(p, sign(p)))
}

// tagPayload is an unsigned annotated tag's content.
func tagPayload(commit, name, message string) []byte {
	return []byte("object " + commit + "\ntype commit\ntag " + name + "\n" +
		"tagger Convoy Test <test@convoy.invalid> 1704067200 +0000\n\n" + message)
}

// signedTag is an annotated tag of commit signed by sign: the signature
// follows the message, as git writes it.
func signedTag(commit, name string, sign func([]byte) []byte) Object {
	p := tagPayload(commit, name, "release "+name+"\n")
	if sign == nil {
		return object(typeTag, p)
	}
	return object(typeTag, append(p, sign(p)...))
}

// mustKeys parses data with the default limits.
func mustKeys(t testing.TB, data map[string][]byte) *Keys {
	t.Helper()
	k, err := ParseKeys(data, Limits{})
	require.NoError(t, err)
	return k
}
