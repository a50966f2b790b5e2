package cosign

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// keyHint is the verification content of a signature checked against one
// trusted key: the key whose fingerprint is hint. A signature carries no
// trustworthy name of its key (a legacy one none at all), so each is
// checked against each trusted key in turn.
type keyHint struct{ hint string }

var _ verify.VerificationContent = keyHint{}

func (h keyHint) CompareKey(key any, tm root.TrustedMaterial) bool {
	v, err := tm.PublicKeyVerifier(h.hint)
	if err != nil {
		return false
	}
	pub, err := v.PublicKey()
	if err != nil {
		return false
	}
	eq, ok := key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(pub)
}

func (h keyHint) ValidAtTime(t time.Time, tm root.TrustedMaterial) bool {
	v, err := tm.PublicKeyVerifier(h.hint)
	return err == nil && v.ValidAtTime(t)
}

func (h keyHint) Certificate() *x509.Certificate      { return nil }
func (h keyHint) Intermediates() []*x509.Certificate  { return nil }
func (h keyHint) PublicKey() verify.PublicKeyProvider { return h }
func (h keyHint) Hint() string                        { return h.hint }

// simpleSigning is a legacy (tag layout) signature as a sigstore-go signed
// entity: a message signature over the payload, checked against one key,
// without transparency log entries or timestamps.
type simpleSigning struct {
	payload   []byte
	signature []byte
	key       keyHint
}

var _ verify.SignedEntity = (*simpleSigning)(nil)

func (s *simpleSigning) HasInclusionPromise() bool { return false }
func (s *simpleSigning) HasInclusionProof() bool   { return false }

func (s *simpleSigning) SignatureContent() (verify.SignatureContent, error) {
	sum := sha256.Sum256(s.payload)
	return bundle.NewMessageSignature(sum[:], "SHA2_256", s.signature), nil
}

func (s *simpleSigning) Timestamps() ([][]byte, error)       { return nil, nil }
func (s *simpleSigning) TlogEntries() ([]*tlog.Entry, error) { return nil, nil }
func (s *simpleSigning) Version() (string, error)            { return "", nil }
func (s *simpleSigning) VerificationContent() (verify.VerificationContent, error) {
	return s.key, nil
}

// keyedBundle is a Sigstore bundle checked against one trusted key,
// whatever key hint it carries. A bundle verified by a certificate keeps
// its certificate, which the key-only policy refuses.
type keyedBundle struct {
	*bundle.Bundle
	key keyHint
}

func (b *keyedBundle) VerificationContent() (verify.VerificationContent, error) {
	vc, err := b.Bundle.VerificationContent()
	if err != nil {
		return nil, err
	}
	if vc.PublicKey() == nil {
		return vc, nil
	}
	return b.key, nil
}
