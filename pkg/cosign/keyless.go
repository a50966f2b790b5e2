package cosign

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Bounds of keyless verification.
const (
	// MaxIdentities is how many identities one Keyless accepts at most.
	MaxIdentities = 16
	// MaxPatternLength bounds an identity's regular expression.
	MaxPatternLength = 512
	// MaxTrustRootBytes bounds a trusted_root.json.
	MaxTrustRootBytes = 512 << 10
)

// TrustRoot is a Sigstore trust root (a trusted_root.json): the
// certificate authorities keyless certificates must chain to, and the
// transparency logs, timestamping authorities and certificate transparency
// logs whose evidence a signature must carry, as the root lists them.
type TrustRoot struct {
	material root.TrustedMaterial
	options  []verify.VerifierOption
	// requires says, for messages, what a signature must carry.
	requires string
	digest   string
}

// ParseTrustRoot reads a trusted_root.json (at most MaxTrustRootBytes).
// Its errors are *Error of KindInvalid.
func ParseTrustRoot(data []byte) (*TrustRoot, error) {
	if len(data) > MaxTrustRootBytes {
		return nil, errorf(KindInvalid, nil, "the trusted root is %d bytes, more than the limit of %d", len(data), MaxTrustRootBytes)
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, errorf(KindInvalid, err, "the trusted root is not a Sigstore trusted_root.json: %s", echo(err.Error()))
	}
	sum := sha256.Sum256(data)
	return NewTrustRoot(tr, "sha256:"+hex.EncodeToString(sum[:]))
}

// NewTrustRoot is the TrustRoot of material (identified, in verdict
// caches, by digest). What a signature must carry follows from what the
// root lists: a transparency log entry and its time when it lists Rekor
// logs (as cosign requires by default), otherwise a signed timestamp of
// one of its timestamping authorities; an embedded certificate
// transparency timestamp when it lists CT logs. A root of no certificate
// authority, or of neither a transparency log nor a timestamping
// authority, verifies nothing: an error of KindInvalid.
func NewTrustRoot(material root.TrustedMaterial, digest string) (*TrustRoot, error) {
	if len(material.FulcioCertificateAuthorities()) == 0 {
		return nil, errorf(KindInvalid, nil, "the trusted root lists no certificate authority: no keyless certificate can chain to it")
	}
	t := &TrustRoot{material: material, digest: digest}
	var requires []string
	switch {
	case len(material.RekorLogs()) > 0:
		t.options = append(t.options, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
		requires = append(requires, "an entry of one of its transparency logs")
	case len(material.TimestampingAuthorities()) > 0:
		t.options = append(t.options, verify.WithSignedTimestamps(1))
		requires = append(requires, "a signed timestamp of one of its timestamping authorities")
	default:
		return nil, errorf(KindInvalid, nil, "the trusted root lists neither a transparency log nor a timestamping authority: "+
			"nothing could tell that a short-lived certificate was valid when it signed")
	}
	if len(material.CTLogs()) > 0 {
		t.options = append(t.options, verify.WithSignedCertificateTimestamps(1))
		requires = append(requires, "a certificate transparency timestamp")
	}
	t.requires = strings.Join(requires, " and ")
	return t, nil
}

// Digest identifies the trust root, for verdict caches.
func (t *TrustRoot) Digest() string { return t.digest }

// Identity is whose keyless certificates verify: regular expressions of
// the certificate's OIDC issuer (its Fulcio extension) and of its subject
// (its subject alternative name: the workflow's URI, an email), each
// matching the whole value.
type Identity struct {
	Issuer  string
	Subject string
	issuer  *regexp.Regexp
	subject *regexp.Regexp
}

// Keyless is a keyless policy: certificates of the trust root, of one of
// the identities.
type Keyless struct {
	Root       *TrustRoot
	identities []Identity
	digest     string
}

// NewKeyless compiles the identities' expressions, anchored at both ends
// (issuer "https://token.actions.githubusercontent.com" matches that
// issuer only, not one that contains it). Its errors are *Error of
// KindInvalid.
func NewKeyless(trust *TrustRoot, identities []Identity) (*Keyless, error) {
	if trust == nil {
		return nil, errorf(KindInvalid, nil, "no trusted root")
	}
	if len(identities) == 0 {
		return nil, errorf(KindInvalid, nil, "no identity to match")
	}
	if len(identities) > MaxIdentities {
		return nil, errorf(KindInvalid, nil, "%d identities, more than the limit of %d", len(identities), MaxIdentities)
	}
	k := &Keyless{Root: trust}
	h := sha256.New()
	for i, id := range identities {
		var err error
		if id.issuer, err = compileAnchored(id.Issuer); err != nil {
			return nil, errorf(KindInvalid, err, "identity %d: issuer: %s", i, err.Error())
		}
		if id.subject, err = compileAnchored(id.Subject); err != nil {
			return nil, errorf(KindInvalid, err, "identity %d: subject: %s", i, err.Error())
		}
		k.identities = append(k.identities, id)
		fmt.Fprintf(h, "%d:%s\x00%d:%s\x00", len(id.Issuer), id.Issuer, len(id.Subject), id.Subject)
	}
	k.digest = trust.digest + "/" + hex.EncodeToString(h.Sum(nil))
	return k, nil
}

func compileAnchored(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fmt.Errorf("an empty expression")
	}
	if len(pattern) > MaxPatternLength {
		return nil, fmt.Errorf("the expression is %d bytes, more than the limit of %d", len(pattern), MaxPatternLength)
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%q is not a regular expression: %s", echo(pattern), echo(err.Error()))
	}
	return re, nil
}

// Digest identifies the policy (trust root and identities), for verdict
// caches.
func (k *Keyless) Digest() string { return k.digest }

// match tells whether a certificate of issuer and subject is of one of
// the identities.
func (k *Keyless) match(issuer, subject string) bool {
	for _, id := range k.identities {
		if id.issuer.MatchString(issuer) && id.subject.MatchString(subject) {
			return true
		}
	}
	return false
}

// describe names the identities, for messages.
func (k *Keyless) describe() string {
	items := make([]string, 0, len(k.identities))
	for _, id := range k.identities {
		items = append(items, fmt.Sprintf("issuer ~ %q, subject ~ %q", echo(id.Issuer), echo(id.Subject)))
	}
	return "[" + shortList(items) + "]"
}

// signerOf is the issuer and subject of a keyless certificate, read
// before anything about it is verified (for messages only).
func signerOf(cert *x509.Certificate) (issuer, subject string) {
	if cert == nil {
		return "", ""
	}
	s, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return "", ""
	}
	return s.Issuer, s.SubjectAlternativeName
}

// describeSigner names a certificate's identity, for messages.
func describeSigner(issuer, subject string) string {
	if issuer == "" && subject == "" {
		return "a certificate without an OIDC identity"
	}
	return fmt.Sprintf("issuer %q, subject %q", echo(issuer), echo(subject))
}
