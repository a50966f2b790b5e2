package gitverify

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// verifyOpenPGP verifies an armored detached OpenPGP signature of payload
// with the OpenPGP keys of k, as go-git's Commit.Verify does (go-crypto's
// detached signature check) but with the signature packet read first, so
// that a failure names the key that signed.
func (k *Keys) verifyOpenPGP(what string, payload, block []byte) (*Signer, error) {
	body, err := dearmor(block)
	if err != nil {
		return nil, errorf(KindMalformed, err, "%s: the OpenPGP signature does not parse", what)
	}
	sig, err := readSignature(body)
	if err != nil {
		return nil, errorf(KindMalformed, err, "%s: the OpenPGP signature does not parse", what)
	}
	issuer := issuerOf(sig)
	_, entity, err := openpgp.VerifyDetachedSignature(k.openpgp, bytes.NewReader(payload), bytes.NewReader(body), nil)
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return nil, errorf(KindUnknownKey, nil, "%s is signed by the OpenPGP key %s, which is not in the key Secret (%d keys)", what, issuer, k.Len())
	case errors.Is(err, pgperrors.ErrKeyExpired), errors.Is(err, pgperrors.ErrSignatureExpired), errors.Is(err, pgperrors.ErrKeyRevoked):
		return nil, errorf(KindBadSignature, err, "%s: the OpenPGP signature by %s", what, issuer)
	case err != nil:
		var structural pgperrors.StructuralError
		var unsupported pgperrors.UnsupportedError
		if errors.As(err, &structural) || errors.As(err, &unsupported) {
			return nil, errorf(KindMalformed, err, "%s: the OpenPGP signature by %s", what, issuer)
		}
		return nil, errorf(KindBadSignature, err, "%s: the OpenPGP signature by %s does not verify its content", what, issuer)
	}
	fp := fingerprint(entity.PrimaryKey.Fingerprint)
	s := &Signer{Format: FormatOpenPGP, Fingerprint: fp, Key: k.pgpSource[fp]}
	if sig.IssuerKeyId != nil {
		s.KeyID = fmt.Sprintf("%016X", *sig.IssuerKeyId)
	}
	if id := entity.PrimaryIdentity(); id != nil {
		s.Identity = id.Name
	}
	return s, nil
}

// dearmor is the body of the one armored signature block.
func dearmor(block []byte) ([]byte, error) {
	b, err := armor.Decode(bytes.NewReader(block))
	if err != nil {
		return nil, err
	}
	if b.Type != openpgp.SignatureType {
		return nil, fmt.Errorf("an armored %q, not a %q", b.Type, openpgp.SignatureType)
	}
	// The block is bounded (Limits.SignatureBytes): so is its body.
	return io.ReadAll(b.Body)
}

// readSignature is the first packet of body, a signature.
func readSignature(body []byte) (*packet.Signature, error) {
	p, err := packet.NewReader(bytes.NewReader(body)).Next()
	if err != nil {
		return nil, err
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		return nil, fmt.Errorf("a packet of type %T, not a signature", p)
	}
	return sig, nil
}

// issuerOf names the key that made sig: its fingerprint where the
// signature carries it, else its key id.
func issuerOf(sig *packet.Signature) string {
	switch {
	case len(sig.IssuerFingerprint) > 0:
		return fingerprint(sig.IssuerFingerprint)
	case sig.IssuerKeyId != nil:
		return fmt.Sprintf("%016X", *sig.IssuerKeyId)
	}
	return "(no issuer named)"
}
