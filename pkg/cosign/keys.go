package cosign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// KeySuffix ends the name of every entry ParseKeys reads.
const KeySuffix = ".pub"

// Bounds of ParseKeys.
const (
	// MaxKeys is how many keys one Keys holds at most.
	MaxKeys = 32
	// maxKeyBytes bounds one entry (an RSA 4096 public key is ~800 bytes).
	maxKeyBytes = 16 << 10
)

// Keys are trusted public keys.
type Keys struct {
	// keys, sorted by name.
	keys []*trustedKey
	// byFingerprint: the first (by name) key of each fingerprint.
	byFingerprint map[string]*trustedKey
	// unique: one key per fingerprint, in the order of keys.
	unique  []*trustedKey
	trusted root.TrustedMaterial
	digest  string
}

type trustedKey struct {
	name        string
	fingerprint string
	verifier    *root.ExpiringKey
}

// KeyInfo names a key of Keys.
type KeyInfo struct {
	// Name is the entry's name (e.g. ci.pub).
	Name string
	// Fingerprint is sha256:<hex of the SHA-256 of the DER
	// SubjectPublicKeyInfo>.
	Fingerprint string
}

// ParseKeys reads every entry of data whose name ends in .pub as one PEM
// public key ("PUBLIC KEY": ECDSA P-256 or P-384, Ed25519, RSA of 2048,
// 3072 or 4096 bits); other entries are ignored. A malformed entry, a key
// of another type, more than MaxKeys keys or none is an error (KindInvalid)
// that names the entry.
func ParseKeys(data map[string][]byte) (*Keys, error) {
	names := make([]string, 0, len(data))
	for name := range data {
		if strings.HasSuffix(name, KeySuffix) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, errorf(KindInvalid, nil, "no public key: no entry named *%s", KeySuffix)
	}
	if len(names) > MaxKeys {
		return nil, errorf(KindInvalid, nil, "%d public keys, more than the limit of %d", len(names), MaxKeys)
	}
	sort.Strings(names)
	k := &Keys{byFingerprint: map[string]*trustedKey{}}
	for _, name := range names {
		key, err := parseKey(name, data[name])
		if err != nil {
			return nil, errorf(KindInvalid, err, "public key %s: %v", echo(name), err)
		}
		k.keys = append(k.keys, key)
		if _, ok := k.byFingerprint[key.fingerprint]; !ok {
			k.byFingerprint[key.fingerprint] = key
			k.unique = append(k.unique, key)
		}
	}
	k.trusted = root.NewTrustedPublicKeyMaterial(func(hint string) (root.TimeConstrainedVerifier, error) {
		if key, ok := k.byFingerprint[hint]; ok {
			return key.verifier, nil
		}
		return nil, fmt.Errorf("no trusted key of fingerprint %s", echo(hint))
	})
	h := sha256.New()
	for _, key := range k.keys {
		fmt.Fprintf(h, "%s\x00%s\n", key.name, key.fingerprint)
	}
	k.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return k, nil
}

// parseKey reads one PEM public key, and nothing else.
func parseKey(name string, data []byte) (*trustedKey, error) {
	if len(data) > maxKeyBytes {
		return nil, fmt.Errorf("%d bytes, more than the limit of %d", len(data), maxKeyBytes)
	}
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("a PEM block of type %q, not PUBLIC KEY", echo(block.Type))
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("more than one PEM block")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a public key: %w", err)
	}
	verifiers, err := keyVerifiers(pub)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding the key: %w", err)
	}
	sum := sha256.Sum256(der)
	return &trustedKey{
		name:        name,
		fingerprint: "sha256:" + hex.EncodeToString(sum[:]),
		verifier:    root.NewExpiringKey(&anyVerifier{pub: pub, verifiers: verifiers}, time.Time{}, time.Time{}),
	}, nil
}

// keyVerifiers are the verifiers of the signatures cosign writes with pub:
// sigstore's default for its type first, then the ones older cosign
// releases used (SHA-256 for P-384, Ed25519ph for message signatures).
func keyVerifiers(pub crypto.PublicKey) ([]signature.Verifier, error) {
	var extra []signature.LoadOption
	switch pub := pub.(type) {
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() {
			return nil, fmt.Errorf("an ECDSA key of curve %s: only P-256 and P-384 are supported", pub.Curve.Params().Name)
		}
	case ed25519.PublicKey:
		extra = append(extra, options.WithED25519ph())
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 2048 && bits != 3072 && bits != 4096 {
			return nil, fmt.Errorf("an RSA key of %d bits: only 2048, 3072 and 4096 bits are supported", bits)
		}
	default:
		return nil, fmt.Errorf("a key of type %T: only ECDSA P-256/P-384, Ed25519 and RSA keys are supported", pub)
	}
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("loading the key: %w", err)
	}
	verifiers := []signature.Verifier{v}
	if ec, ok := pub.(*ecdsa.PublicKey); ok && ec.Curve == elliptic.P384() {
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("loading the key: %w", err)
		}
		verifiers = append(verifiers, v)
	}
	if len(extra) > 0 {
		v, err := signature.LoadDefaultVerifier(pub, extra...)
		if err != nil {
			return nil, fmt.Errorf("loading the key: %w", err)
		}
		verifiers = append(verifiers, v)
	}
	return verifiers, nil
}

// Keys lists the keys, sorted by name.
func (k *Keys) Keys() []KeyInfo {
	out := make([]KeyInfo, len(k.keys))
	for i, key := range k.keys {
		out[i] = KeyInfo{Name: key.name, Fingerprint: key.fingerprint}
	}
	return out
}

// Digest is sha256:<hex> of every key's name and fingerprint, sorted by
// name: it changes when the trust material does, to key a verdict cache.
func (k *Keys) Digest() string { return k.digest }

// describe names the keys for a message: name (fingerprint), at most four.
func (k *Keys) describe() string {
	const most = 4
	var parts []string
	for i, key := range k.keys {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(k.keys)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", echo(key.name), key.fingerprint))
	}
	return strings.Join(parts, ", ")
}

// anyVerifier verifies a signature with the first of its verifiers that
// accepts it.
type anyVerifier struct {
	pub       crypto.PublicKey
	verifiers []signature.Verifier
}

func (a *anyVerifier) PublicKey(...signature.PublicKeyOption) (crypto.PublicKey, error) {
	return a.pub, nil
}

func (a *anyVerifier) VerifySignature(sig, message io.Reader, opts ...signature.VerifyOption) error {
	// Both are bounded by the caller: a signature and a message of at most
	// Limits.MaxBytes (or a digest, with an empty message).
	s, err := io.ReadAll(sig)
	if err != nil {
		return fmt.Errorf("reading the signature: %w", err)
	}
	m, err := io.ReadAll(message)
	if err != nil {
		return fmt.Errorf("reading the message: %w", err)
	}
	var errs []error
	for _, v := range a.verifiers {
		err := v.VerifySignature(bytes.NewReader(s), bytes.NewReader(m), opts...)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
