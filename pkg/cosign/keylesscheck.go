package cosign

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/kumodo/convoy-apiserver/pkg/errtext"
)

// The annotations of a keyless signature in the legacy (tag) layout, as
// cosign v2 writes them beside SignatureAnnotation.
const (
	// CertificateAnnotation: the PEM of the signing certificate.
	CertificateAnnotation = "dev.sigstore.cosign/certificate"
	// ChainAnnotation: the PEM of its chain (read by cosign, not here: the
	// trust root's certificate authorities are the chain).
	ChainAnnotation = "dev.sigstore.cosign/chain"
	// BundleAnnotation: the transparency log entry (a Rekor bundle: its
	// signed entry timestamp and its payload).
	BundleAnnotation = "dev.sigstore.cosign/bundle"
	// TimestampAnnotation: a signed RFC 3161 timestamp of the signature.
	TimestampAnnotation = "dev.sigstore.cosign/rfc3161timestamp"
)

// maxCertificateBytes bounds the certificate annotation.
const maxCertificateBytes = 16 << 10

// checkTagKeyless checks one signature layer of the tag layout with the
// keyless policy: its certificate, log entry and timestamp against the
// trust root, its signature over its payload, the payload's digest, then
// the certificate's identity.
func (r *run) checkTagKeyless(payload, sig []byte, signed v1.Hash, annotations map[string]string) outcome {
	entity, err := parseKeylessLayer(payload, sig, annotations)
	if err != nil {
		return outcome{result: malformed, detail: "a signature layer: " + err.Error()}
	}
	issuer, subject := signerOf(entity.cert)
	policy := verify.NewPolicy(verify.WithArtifact(bytes.NewReader(payload)), verify.WithoutIdentitiesUnsafe())
	if _, err := r.verifier.Verify(entity, policy); err != nil {
		return outcome{result: untrusted, issuer: issuer, subject: subject, detail: distrust(issuer, subject, err)}
	}
	return r.keylessOutcome(issuer, subject, signed == r.digest, signed.String())
}

// keylessOutcome is the outcome of a signature that verifies against the
// trust root: of the expected identity or not, of ref's digest (or of
// other).
func (r *run) keylessOutcome(issuer, subject string, ofRef bool, other string) outcome {
	o := outcome{issuer: issuer, subject: subject}
	switch {
	case !r.keyless.match(issuer, subject):
		o.result = wrongIdentity
	case !ofRef:
		o.result, o.detail = otherDigest, other
	default:
		o.result = verified
	}
	return o
}

// checkBundleKeyless checks a bundle of a cosign signature with the
// keyless policy.
func (r *run) checkBundleKeyless(b *bundle.Bundle, content verify.SignatureContent, d v1.Descriptor) outcome {
	vc, err := b.VerificationContent()
	if err != nil {
		return outcome{result: malformed, detail: fmt.Sprintf("the bundle of referrer %s: %s", d.Digest, echo(err.Error()))}
	}
	if vc.Certificate() == nil {
		return outcome{result: untrusted, detail: "a bundle signed by a key, not by a keyless certificate"}
	}
	issuer, subject := signerOf(vc.Certificate())
	policy := verify.NewPolicy(verify.WithArtifactDigest("sha256", r.digestBytes), verify.WithoutIdentitiesUnsafe())
	_, err = r.verifier.Verify(b, policy)
	if err == nil {
		return r.keylessOutcome(issuer, subject, true, "")
	}
	// Does it verify, of another digest?
	if envelope := content.EnvelopeContent(); envelope != nil {
		if res, err2 := r.verifier.Verify(b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithoutIdentitiesUnsafe())); err2 == nil {
			return r.keylessOutcome(issuer, subject, false, subjects(res))
		}
	} else if msg := content.MessageSignatureContent(); msg != nil {
		policy := verify.NewPolicy(verify.WithArtifactDigest(msg.DigestAlgorithm(), msg.Digest()), verify.WithoutIdentitiesUnsafe())
		if _, err2 := r.verifier.Verify(b, policy); err2 == nil {
			return r.keylessOutcome(issuer, subject, false, hashName(msg.DigestAlgorithm())+":"+hex.EncodeToString(msg.Digest()))
		}
	}
	return outcome{result: untrusted, issuer: issuer, subject: subject, detail: distrust(issuer, subject, err)}
}

// distrust says why a keyless signature does not verify against the
// trust root: sigstore-go's error, after the signer's identity.
func distrust(issuer, subject string, err error) string {
	step, msg := errtext.SigstoreFailure(err)
	if means, ok := distrustCauses[step]; ok {
		msg = means + " (" + msg + ")"
	}
	return fmt.Sprintf("the signature by %s: %s", describeSigner(issuer, subject), echo(msg))
}

// distrustCauses say in a user's words what sigstore-go's errors mean, by
// the step of the verification that failed.
var distrustCauses = map[errtext.SigstoreStep]string{
	errtext.StepLogInclusion:    "no valid entry of a transparency log of the trusted root",
	errtext.StepTimestamps:      "no valid timestamp of the trusted root dates the signature",
	errtext.StepLeafCertificate: "the certificate does not chain to a certificate authority of the trusted root at the signature's time",
	errtext.StepSCT:             "the certificate carries no valid certificate transparency timestamp of the trusted root",
	errtext.StepSignature:       "the signature is not the certificate's",
}

// keylessVerdict is the error of keyless signatures none of which
// verified (no otherDigest among them), as t counts them.
func (r *run) keylessVerdict(t tally) *Error {
	switch {
	case t.others > 0:
		return errorf(KindWrongIdentity, nil, "%d signature(s) of %s verify against the trusted root, none by an expected identity %s: found %s",
			t.others, r.digest, r.keyless.describe(), t.firstOther)
	case t.distrusted > 0:
		msg := fmt.Sprintf("%d signature(s) of %s, none verifies against the trusted root (which requires %s): %s",
			t.distrusted, r.digest, r.keyless.Root.requires, t.firstDistrust)
		if t.bad > 0 {
			msg += fmt.Sprintf("; %d more malformed: %s", t.bad, t.firstBad)
		}
		return errorf(KindUntrusted, nil, "%s", msg)
	case t.bad > 0:
		return errorf(KindInvalid, nil, "%d malformed signature(s) of %s: %s", t.bad, r.digest, t.firstBad)
	}
	return errorf(KindNoSignature, nil, "no signature of %s in %s (its referrers are not signatures)", r.digest, r.ref.Context().Name())
}

// certSigning is a keyless legacy (tag layout) signature as a sigstore-go
// signed entity: a message signature over the payload, by a certificate,
// with the transparency log entry and the timestamp of its annotations.
type certSigning struct {
	payload    []byte
	signature  []byte
	cert       *x509.Certificate
	entries    []*tlog.Entry
	timestamps [][]byte
}

var _ verify.SignedEntity = (*certSigning)(nil)

func (s *certSigning) HasInclusionPromise() bool { return len(s.entries) > 0 }
func (s *certSigning) HasInclusionProof() bool   { return false }

func (s *certSigning) SignatureContent() (verify.SignatureContent, error) {
	sum := sha256.Sum256(s.payload)
	return bundle.NewMessageSignature(sum[:], "SHA2_256", s.signature), nil
}

func (s *certSigning) Timestamps() ([][]byte, error)       { return s.timestamps, nil }
func (s *certSigning) TlogEntries() ([]*tlog.Entry, error) { return s.entries, nil }
func (s *certSigning) Version() (string, error)            { return "", nil }
func (s *certSigning) VerificationContent() (verify.VerificationContent, error) {
	return bundle.NewCertificate(s.cert), nil
}

// parseKeylessLayer reads the annotations of a keyless signature layer.
func parseKeylessLayer(payload, sig []byte, annotations map[string]string) (*certSigning, error) {
	certPEM := annotations[CertificateAnnotation]
	if certPEM == "" {
		return nil, fmt.Errorf("no %s annotation: not a keyless signature", CertificateAnnotation)
	}
	cert, err := parseCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	s := &certSigning{payload: payload, signature: sig, cert: cert}
	if raw := annotations[BundleAnnotation]; raw != "" {
		entry, err := parseRekorBundle(raw)
		if err != nil {
			return nil, fmt.Errorf("the %s annotation: %w", BundleAnnotation, err)
		}
		s.entries = []*tlog.Entry{entry}
	}
	if raw := annotations[TimestampAnnotation]; raw != "" {
		var ts struct {
			SignedRFC3161Timestamp []byte `json:"SignedRFC3161Timestamp"`
		}
		if err := json.Unmarshal([]byte(raw), &ts); err != nil || len(ts.SignedRFC3161Timestamp) == 0 {
			return nil, fmt.Errorf("the %s annotation is not a signed timestamp", TimestampAnnotation)
		}
		s.timestamps = [][]byte{ts.SignedRFC3161Timestamp}
	}
	return s, nil
}

func parseCertificate(certPEM string) (*x509.Certificate, error) {
	if len(certPEM) > maxCertificateBytes {
		return nil, fmt.Errorf("the %s annotation is %d bytes, more than the limit of %d", CertificateAnnotation, len(certPEM), maxCertificateBytes)
	}
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("the %s annotation is not a PEM certificate", CertificateAnnotation)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the %s annotation: %s", CertificateAnnotation, echo(err.Error()))
	}
	return cert, nil
}

// rekorBundle is cosign's legacy record of a transparency log entry.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// parseRekorBundle reads a legacy Rekor bundle as a log entry whose signed
// entry timestamp is its inclusion promise.
func parseRekorBundle(raw string) (*tlog.Entry, error) {
	var rb rekorBundle
	if err := json.Unmarshal([]byte(raw), &rb); err != nil {
		return nil, fmt.Errorf("not a Rekor bundle: %s", echo(err.Error()))
	}
	body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
	if err != nil || len(body) == 0 {
		return nil, errors.New("its body is not base64")
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil || len(logID) == 0 {
		return nil, errors.New("its logID is not hex")
	}
	if len(rb.SignedEntryTimestamp) == 0 {
		return nil, errors.New("no SignedEntryTimestamp")
	}
	var kv struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(body, &kv); err != nil || kv.Kind == "" || kv.APIVersion == "" {
		return nil, errors.New("its body names no kind and apiVersion")
	}
	entry, err := tlog.ParseTransparencyLogEntry(&protorekor.TransparencyLogEntry{
		LogIndex:          rb.Payload.LogIndex,
		LogId:             &protocommon.LogId{KeyId: logID},
		KindVersion:       &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion},
		IntegratedTime:    rb.Payload.IntegratedTime,
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
		CanonicalizedBody: body,
	})
	if err != nil {
		return nil, fmt.Errorf("not a log entry: %s", echo(strings.TrimSpace(err.Error())))
	}
	return entry, nil
}
