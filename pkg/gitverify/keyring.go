package gitverify

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// OpenPGPKeyRing is the OpenPGP public keys of k (its keys ending .asc), as
// a key ring for go-crypto or Helm's provenance package; empty when the
// Secret holds SSH keys only. The caller must not change it.
func (k *Keys) OpenPGPKeyRing() openpgp.EntityList { return k.openpgp }

// ReadOpenPGPSignature reads the first packet of the unarmored signature r
// (a clear-signed message's signature block), which must be a signature,
// reading at most limit bytes.
func ReadOpenPGPSignature(r io.Reader, limit int64) (*packet.Signature, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return nil, err
	}
	return readSignature(body)
}

// OpenPGPIssuer names the key that made sig, as the messages of Verify do:
// its fingerprint where the signature carries it, else its key id.
func OpenPGPIssuer(sig *packet.Signature) string { return issuerOf(sig) }

// OpenPGPSigner is who made sig, a signature that e, an entity of k's key
// ring, verified: e's fingerprint, primary identity and Secret key, and
// the key id of the (sub)key that signed.
func (k *Keys) OpenPGPSigner(e *openpgp.Entity, sig *packet.Signature) *Signer {
	fp := fingerprint(e.PrimaryKey.Fingerprint)
	s := &Signer{Format: FormatOpenPGP, Fingerprint: fp, Key: k.pgpSource[fp]}
	switch {
	case sig.IssuerKeyId != nil:
		s.KeyID = fmt.Sprintf("%016X", *sig.IssuerKeyId)
	case len(sig.IssuerFingerprint) > 0:
		// A signature that names its key by fingerprint alone: the key id
		// of the key of e with that fingerprint.
		keys := []*packet.PublicKey{e.PrimaryKey}
		for _, sub := range e.Subkeys {
			keys = append(keys, sub.PublicKey)
		}
		for _, pk := range keys {
			if bytes.Equal(pk.Fingerprint, sig.IssuerFingerprint) {
				s.KeyID = fmt.Sprintf("%016X", pk.KeyId)
			}
		}
	}
	if id := e.PrimaryIdentity(); id != nil {
		s.Identity = id.Name
	}
	return s
}
