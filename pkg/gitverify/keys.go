package gitverify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

// Limits bound what is read before it is parsed: a signature block, and
// the key Secret (its bytes and its keys). Zero fields take the defaults.
type Limits struct {
	// SignatureBytes bounds a signature block (DefaultSignatureBytes).
	SignatureBytes int
	// KeyBytes bounds the Secret's data, all keys together
	// (DefaultKeyBytes).
	KeyBytes int
	// Keys bounds the Secret's entries, and the public keys they hold
	// together (DefaultKeys).
	Keys int
}

// Defaults of Limits: an OpenPGP signature by a 4096-bit RSA key is about
// 1 KiB armored, an SSH one less; a Secret is at most 1 MiB anyway.
const (
	DefaultSignatureBytes = 64 << 10
	DefaultKeyBytes       = 1 << 20
	DefaultKeys           = 256
)

func (l Limits) orDefaults() Limits {
	if l.SignatureBytes <= 0 {
		l.SignatureBytes = DefaultSignatureBytes
	}
	if l.KeyBytes <= 0 {
		l.KeyBytes = DefaultKeyBytes
	}
	if l.Keys <= 0 {
		l.Keys = DefaultKeys
	}
	return l
}

// Secret keys by name: OpenPGP armored public keys (one key or a key ring,
// one or more blocks) in keys ending ".asc"; SSH public keys in keys
// ending ".pub" and in the key "allowed_signers", one a line, as
// authorized_keys ("[options] keytype base64 [comment]") or as Git's
// gpg.ssh.allowedSignersFile ("principal[,...] [options] keytype base64
// [comment]") lists them. Other keys are not read.
const (
	SuffixOpenPGP  = ".asc"
	SuffixSSH      = ".pub"
	AllowedSigners = "allowed_signers"
)

// Keys is a set of trusted public keys, parsed from a Secret's data.
type Keys struct {
	openpgp openpgp.EntityList
	// pgpSource is the Secret key each OpenPGP entity came from, by its
	// primary key's fingerprint.
	pgpSource map[string]string
	// ssh are the SSH keys, by SHA256 fingerprint.
	ssh    map[string][]sshKey
	digest string
	limits Limits
}

// sshKey is an SSH public key of the Secret, the principals its allowed
// signers line names, and the Secret key it came from.
type sshKey struct {
	key        ssh.PublicKey
	principals string
	source     string
}

// ParseKeys parses the public keys of a Secret's data within limits
// (KindInvalidKeys): the number of entries and their bytes are checked
// before any is parsed, and the keys they hold once parsed.
func ParseKeys(data map[string][]byte, limits Limits) (*Keys, error) {
	limits = limits.orDefaults()
	if len(data) > limits.Keys {
		return nil, errorf(KindInvalidKeys, nil, "the key Secret has %d entries, more than the limit of %d keys", len(data), limits.Keys)
	}
	total := 0
	for name, value := range data {
		total += len(name) + len(value)
	}
	if total > limits.KeyBytes {
		return nil, errorf(KindInvalidKeys, nil, "the key Secret is %d bytes, more than the limit of %d bytes", total, limits.KeyBytes)
	}
	k := &Keys{pgpSource: map[string]string{}, ssh: map[string][]sshKey{}, limits: limits}
	count := 0
	digest := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(data)) {
		var n int
		var err error
		switch {
		case strings.HasSuffix(name, SuffixOpenPGP):
			n, err = k.addOpenPGP(name, data[name])
		case strings.HasSuffix(name, SuffixSSH), name == AllowedSigners:
			n, err = k.addSSH(name, data[name], limits.Keys-count)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if count += n; count > limits.Keys {
			return nil, errorf(KindInvalidKeys, nil, "the key Secret holds more than the limit of %d public keys", limits.Keys)
		}
		digest.Write([]byte(name))
		digest.Write([]byte{0})
		digest.Write(data[name])
		digest.Write([]byte{0})
	}
	if count == 0 {
		return nil, errorf(KindInvalidKeys, nil, "the key Secret holds no public key (OpenPGP armored in keys ending %s, SSH in keys ending %s or %s)",
			SuffixOpenPGP, SuffixSSH, AllowedSigners)
	}
	k.digest = hex.EncodeToString(digest.Sum(nil))
	return k, nil
}

// Digest is the sha256 of the keys read (names and values, in order):
// what a verdict cache keys by, with the object and the mode.
func (k *Keys) Digest() string { return k.digest }

// Len is the number of public keys.
func (k *Keys) Len() int {
	n := len(k.openpgp)
	for _, keys := range k.ssh {
		n += len(keys)
	}
	return n
}

// pgpBegin starts an armored OpenPGP public key block; a private key's
// block is refused.
const (
	pgpBegin        = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
	pgpPrivateBegin = "-----BEGIN PGP PRIVATE KEY BLOCK-----"
)

// addOpenPGP adds the OpenPGP keys of the armored blocks of value (one
// block read by go-crypto holds a key ring; `cat a.asc b.asc` makes
// several blocks).
func (k *Keys) addOpenPGP(name string, value []byte) (int, error) {
	if bytes.Contains(value, []byte(pgpPrivateBegin)) {
		return 0, errorf(KindInvalidKeys, nil, "key %s of the Secret holds an OpenPGP private key: give the public key (gpg --export --armor)", name)
	}
	blocks := bytes.Split(value, []byte(pgpBegin))
	n := 0
	for _, block := range blocks[1:] {
		list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(append([]byte(pgpBegin), block...)))
		if err != nil {
			return 0, errorf(KindInvalidKeys, err, "key %s of the Secret: not an armored OpenPGP public key", name)
		}
		for _, e := range list {
			k.pgpSource[fingerprint(e.PrimaryKey.Fingerprint)] = name
		}
		k.openpgp = append(k.openpgp, list...)
		n += len(list)
	}
	if n == 0 {
		return 0, errorf(KindInvalidKeys, nil, "key %s of the Secret holds no armored OpenPGP public key (%s)", name, pgpBegin)
	}
	return n, nil
}

// fingerprint is an OpenPGP fingerprint as gpg prints it, hex upper case.
func fingerprint(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
