// Package gitverify decides whether a Git commit or annotated tag object is
// signed by one of a set of trusted public keys: OpenPGP (go-crypto, as
// go-git verifies) and SSH (SSHSIG, namespace git, with hiddeco/sshsig, as
// fluxcd/pkg's git/signatures does). It takes the objects as stored, checks
// their ids, and applies Flux's verify modes (HEAD, Tag, TagAndHEAD).
// Everything it reads is bounded before it is parsed (Limits). It does no
// I/O: pkg/git fetches the objects, and the caller reads the Secret and
// maps a failure's Kind to a reason.
package gitverify

import (
	"bytes"
)

// Formats of signatures.
const (
	FormatOpenPGP = "openpgp"
	FormatSSH     = "ssh"
)

// Signer is who signed an object.
type Signer struct {
	// Format is FormatOpenPGP or FormatSSH.
	Format string
	// Fingerprint is the OpenPGP primary key's fingerprint (40 hex digits,
	// upper case, as gpg prints it), or the SSH key's "SHA256:..." as
	// `ssh-keygen -l` prints it.
	Fingerprint string
	// KeyID is the OpenPGP key id of the (sub)key that signed, 16 hex
	// digits; "" for SSH.
	KeyID string
	// Identity is the OpenPGP key's primary identity ("Name <email>"), or
	// the principals of the SSH key's allowed_signers line; "" when none.
	Identity string
	// Key is the Secret's key the public key came from.
	Key string
}

// VerifyCommit verifies the signature of the commit object c with keys.
func VerifyCommit(c Object, keys *Keys) (*Signer, error) {
	if err := checkID(c, typeCommit); err != nil {
		return nil, err
	}
	return keys.verify("commit "+c.ID, "no gpgsig header", splitCommit(c.Data))
}

// VerifyTag verifies the signature of the annotated tag object t with
// keys.
func VerifyTag(t Object, keys *Keys) (*Signer, error) {
	if err := checkID(t, typeTag); err != nil {
		return nil, err
	}
	what := "tag " + t.ID
	if name := parseTagHeader(t.Data).name; name != "" {
		what = "tag " + name + " (" + t.ID + ")"
	}
	return keys.verify(what, "no signature block after its message", splitTag(t.Data))
}

// verify verifies s, the object what, with k; unsigned says how an
// unsigned object of its type looks.
func (k *Keys) verify(what, unsigned string, s signed) (*Signer, error) {
	if len(s.signature) == 0 {
		return nil, errorf(KindUnsigned, nil, "%s is not signed (%s): a signature by one of the %d keys of the key Secret is expected", what, unsigned, k.Len())
	}
	if len(s.signature) > k.limits.SignatureBytes {
		return nil, errorf(KindTooLarge, nil, "%s has a signature block of %d bytes, more than the limit of %d bytes", what, len(s.signature), k.limits.SignatureBytes)
	}
	if n := countBlocks(s.signature); n > 1 {
		// As git and go-git: the signer of several signatures is not one.
		return nil, errorf(KindMalformed, nil, "%s carries %d signature blocks, not one", what, n)
	}
	switch {
	case bytes.HasPrefix(s.signature, []byte("-----BEGIN PGP SIGNATURE-----")):
		return k.verifyOpenPGP(what, s.payload, s.signature)
	case bytes.HasPrefix(s.signature, []byte("-----BEGIN SSH SIGNATURE-----")):
		return k.verifySSH(what, s.payload, s.signature)
	}
	first, _, _ := bytes.Cut(s.signature, []byte("\n"))
	return nil, errorf(KindMalformed, nil, "%s has a signature of a format not supported (%q): OpenPGP or SSH signatures are", what, first)
}

// countBlocks counts the lines of sig that begin a signature block.
func countBlocks(sig []byte) int {
	n := 0
	for line := range bytes.Lines(sig) {
		for _, begin := range signatureBegins {
			if bytes.HasPrefix(line, []byte(begin)) {
				n++
				break
			}
		}
	}
	return n
}
