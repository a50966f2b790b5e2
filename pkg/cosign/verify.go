package cosign

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/kumodo/convoy-apiserver/pkg/errtext"
)

// Layouts of a signature (Signer.Layout).
const (
	// LayoutTag: the legacy sha256-<hex>.sig tag.
	LayoutTag = "tag"
	// LayoutReferrer: a Sigstore bundle attached as an OCI referrer.
	LayoutReferrer = "referrer"
)

// Signer names the key or the keyless identity of the signature that
// verified.
type Signer struct {
	// Key is the name of the key's entry (e.g. ci.pub); empty for a
	// keyless signature.
	Key string
	// Fingerprint is sha256:<hex> of the key's DER SubjectPublicKeyInfo;
	// empty for a keyless signature.
	Fingerprint string
	// Issuer and Subject are the OIDC issuer and the subject alternative
	// name of a keyless signature's certificate; empty for a key's.
	Issuer, Subject string
	// Layout is LayoutTag or LayoutReferrer.
	Layout string
}

// Verify finds the cosign signatures of ref (a repository and the digest
// the caller resolved) in both layouts, and returns the key of the first
// one (tag layout first, then referrers, each in the registry's order)
// that a key of keys made of exactly ref's digest. Otherwise it returns an
// *Error: KindNoSignature, KindWrongKey, KindOtherDigest (before
// KindWrongKey when both apply), KindTooMany, KindInvalid (every signature
// malformed or past limits.MaxBytes, or a malformed listing), KindTooLarge
// (the signature tag's manifest or the referrers index past
// limits.MaxBytes) or KindRegistry (at once, whatever signatures were left
// to check). puller must read through Transport: manifests are refused past
// limits.MaxBytes before they are read whole.
func Verify(ctx context.Context, puller *remote.Puller, ref name.Digest, keys *Keys, limits Limits) (*Signer, error) {
	if puller == nil {
		return nil, errorf(KindInvalid, nil, "no registry client")
	}
	if keys == nil || len(keys.keys) == 0 {
		return nil, errorf(KindInvalid, nil, "no trusted key")
	}
	sv, err := verify.NewVerifier(keys.trusted, verify.WithNoObserverTimestamps(), verify.WithoutStatementPredicate())
	if err != nil {
		return nil, fmt.Errorf("configuring the signature verifier: %w", err)
	}
	r, err := newRun(puller, ref, limits, sv)
	if err != nil {
		return nil, err
	}
	r.keys = keys
	return r.verify(ctx)
}

// VerifyKeyless is Verify of keyless signatures: a signature verifies when
// its certificate chains to the policy's trust root at a time the
// signature's evidence establishes (a transparency log entry, a signed
// timestamp, as the root requires), its certificate is of one of the
// policy's identities, and it signs exactly ref's digest. Besides Verify's
// kinds of errors, it returns KindWrongIdentity (a signature verifies
// against the trust root, by another identity) and KindUntrusted (none
// verifies against the trust root).
func VerifyKeyless(ctx context.Context, puller *remote.Puller, ref name.Digest, keyless *Keyless, limits Limits) (*Signer, error) {
	if puller == nil {
		return nil, errorf(KindInvalid, nil, "no registry client")
	}
	if keyless == nil || keyless.Root == nil {
		return nil, errorf(KindInvalid, nil, "no keyless policy")
	}
	opts := append([]verify.VerifierOption{verify.WithoutStatementPredicate()}, keyless.Root.options...)
	sv, err := verify.NewVerifier(keyless.Root.material, opts...)
	if err != nil {
		return nil, errorf(KindInvalid, err, "the trusted root cannot verify: %s", echo(err.Error()))
	}
	r, err := newRun(puller, ref, limits, sv)
	if err != nil {
		return nil, err
	}
	r.keyless = keyless
	return r.verify(ctx)
}

func newRun(puller *remote.Puller, ref name.Digest, limits Limits, sv *verify.Verifier) (*run, error) {
	digest, err := v1.NewHash(ref.DigestStr())
	if err != nil || digest.Algorithm != "sha256" {
		return nil, errorf(KindInvalid, err, "%s is not a sha256 digest", echo(ref.DigestStr()))
	}
	digestBytes, err := hex.DecodeString(digest.Hex)
	if err != nil {
		return nil, errorf(KindInvalid, err, "%s is not a sha256 digest", echo(ref.DigestStr()))
	}
	limits = limits.withDefaults()
	return &run{
		puller:      puller,
		ref:         ref,
		digest:      digest,
		digestBytes: digestBytes,
		limits:      limits,
		bound:       &bound{limit: limits.MaxBytes},
		verifier:    sv,
		blobs:       map[v1.Hash][]byte{},
	}, nil
}

// run is one Verify.
type run struct {
	puller      *remote.Puller
	ref         name.Digest
	digest      v1.Hash
	digestBytes []byte
	// keys or keyless: the policy.
	keys    *Keys
	keyless *Keyless
	limits  Limits
	// bound is in the context of the run's requests, for Transport.
	bound    *bound
	verifier *verify.Verifier
	// blobs read so far, by digest: a .sig image's layers often share one
	// payload.
	blobs map[v1.Hash][]byte
}

// result is what one signature is.
type result int

const (
	// verified: by a trusted key, of ref's digest.
	verified result = iota
	// otherDigest: by a trusted key, of another digest.
	otherDigest
	// wrongKey: well-formed, by no trusted key.
	wrongKey
	// malformed: not a signature that can be checked (or past a limit).
	malformed
	// notSignature: a referrer that turned out not to be a signature (an
	// attestation, another artifact, a manifest gone since listed).
	notSignature
	// wrongIdentity: keyless, verifies against the trust root, by a
	// certificate of none of the identities.
	wrongIdentity
	// untrusted: keyless, does not verify against the trust root (another
	// root, no log entry, no timestamp, a bad signature).
	untrusted
)

// outcome is what checking one signature found.
type outcome struct {
	result result
	key    *trustedKey
	// issuer and subject of a keyless signature's certificate.
	issuer, subject string
	// detail: for otherDigest, what it signs; for malformed and
	// untrusted, why.
	detail string
}

// signer is the Signer of a verified outcome.
func (o outcome) signer(layout string) *Signer {
	if o.key != nil {
		return &Signer{Key: o.key.name, Fingerprint: o.key.fingerprint, Layout: layout}
	}
	return &Signer{Issuer: o.issuer, Subject: o.subject, Layout: layout}
}

// by names the signer of an outcome, for messages.
func (o outcome) by() string {
	if o.key != nil {
		return fmt.Sprintf("the trusted key %s (%s)", echo(o.key.name), o.key.fingerprint)
	}
	return "the certificate of " + describeSigner(o.issuer, o.subject)
}

func (r *run) verify(ctx context.Context) (*Signer, error) {
	ctx = withBound(ctx, r.bound)
	tags, err := r.listTag(ctx)
	if err != nil {
		return nil, err
	}
	referrers, err := r.listReferrers(ctx)
	if err != nil {
		return nil, err
	}
	total := len(tags) + len(referrers)
	if total == 0 {
		return nil, errorf(KindNoSignature, nil, "no signature of %s in %s (neither the tag %s nor a Sigstore bundle referrer)",
			r.digest, r.ref.Context().Name(), r.sigTag().TagStr())
	}
	if total > r.limits.MaxSignatures {
		return nil, errorf(KindTooMany, nil, "%d signatures of %s (%d in the tag layout, %d referrers), more than the limit of %d",
			total, r.digest, len(tags), len(referrers), r.limits.MaxSignatures)
	}
	var outcomes []outcome
	layouts := []string{}
	for _, layer := range tags {
		o, err := r.checkTag(ctx, layer)
		if err != nil {
			return nil, err
		}
		if o.result == verified {
			return o.signer(LayoutTag), nil
		}
		outcomes = append(outcomes, o)
		layouts = append(layouts, LayoutTag)
	}
	for _, desc := range referrers {
		o, err := r.checkReferrer(ctx, desc)
		if err != nil {
			return nil, err
		}
		if o.result == verified {
			return o.signer(LayoutReferrer), nil
		}
		outcomes = append(outcomes, o)
		layouts = append(layouts, LayoutReferrer)
	}
	return nil, r.verdict(outcomes, layouts)
}

// tally counts the signatures of a run that did not verify, by why, with
// the first of each kind for messages.
type tally struct {
	// tried: by another key; others: by another identity; distrusted: not
	// against the trust root; bad: malformed.
	tried, others, distrusted, bad      int
	firstOther, firstDistrust, firstBad string
}

// verdict is the error of signatures none of which verified.
func (r *run) verdict(outcomes []outcome, layouts []string) *Error {
	var t tally
	for i, o := range outcomes {
		switch o.result {
		case otherDigest:
			return errorf(KindOtherDigest, nil, "the signature (%s layout) by %s signs %s, not %s",
				layouts[i], o.by(), o.detail, r.digest)
		case wrongKey:
			t.tried++
		case wrongIdentity:
			if t.others == 0 {
				t.firstOther = describeSigner(o.issuer, o.subject)
			}
			t.others++
		case untrusted:
			if t.distrusted == 0 {
				t.firstDistrust = o.detail
			}
			t.distrusted++
		case malformed:
			if t.bad == 0 {
				t.firstBad = o.detail
			}
			t.bad++
		}
	}
	if r.keyless != nil {
		return r.keylessVerdict(t)
	}
	switch {
	case t.tried > 0:
		msg := fmt.Sprintf("%d signature(s) of %s tried, none verifies with the trusted keys %s", t.tried, r.digest, r.keys.describe())
		if t.bad > 0 {
			msg += fmt.Sprintf("; %d more malformed: %s", t.bad, t.firstBad)
		}
		return errorf(KindWrongKey, nil, "%s", msg)
	case t.bad > 0:
		return errorf(KindInvalid, nil, "%d malformed signature(s) of %s: %s", t.bad, r.digest, t.firstBad)
	}
	return errorf(KindNoSignature, nil, "no signature of %s in %s (its referrers are not signatures)", r.digest, r.ref.Context().Name())
}

// sigTag is the legacy signature tag of ref: sha256-<hex>.sig.
func (r *run) sigTag() name.Tag {
	return r.ref.Context().Tag(r.digest.Algorithm + "-" + r.digest.Hex + ".sig")
}

// checkTransport refuses to go on when the registry answered (err, the
// error of a request, is nil or the registry's answer) and Transport saw
// none of the run's requests: the registry client does not read through
// it, and would read a manifest whole before its size is checked. The
// error is of no Kind: a caller's bug.
func (r *run) checkTransport(err error) error {
	var terr *transport.Error
	if (err == nil || errors.As(err, &terr)) && !r.bound.seen.Load() {
		return errors.New("the registry client does not read through cosign.Transport: it would read manifests whole before their size is checked")
	}
	return nil
}

// notFound tells a registry's 404: no such tag (or repository).
func notFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// readBlob reads the blob of d, refusing it past the limit (by its
// descriptor, then while reading), and checks it against d. Its errors are
// *Error: KindRegistry, or KindInvalid (the blob is malformed).
func (r *run) readBlob(ctx context.Context, what string, d v1.Descriptor) ([]byte, error) {
	if d.Digest.Algorithm != "sha256" {
		return nil, errorf(KindInvalid, nil, "the %s's digest %s is not sha256", what, echo(d.Digest.String()))
	}
	if d.Size < 0 || d.Size > r.limits.MaxBytes {
		return nil, errorf(KindTooLarge, nil, "the %s %s is %d bytes, more than the limit of %d bytes", what, d.Digest, d.Size, r.limits.MaxBytes)
	}
	if data, ok := r.blobs[d.Digest]; ok && int64(len(data)) == d.Size {
		return data, nil
	}
	layer, err := r.puller.Layer(ctx, r.ref.Context().Digest(d.Digest.String()))
	if err != nil {
		return nil, errorf(KindRegistry, err, "reading the %s %s", what, d.Digest)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, errorf(KindRegistry, err, "reading the %s %s", what, d.Digest)
	}
	defer rc.Close()
	h := sha256.New()
	data, err := io.ReadAll(io.TeeReader(io.LimitReader(rc, d.Size+1), h))
	if err != nil && !errtext.DigestMismatch(err) {
		return nil, errorf(KindRegistry, err, "reading the %s %s", what, d.Digest)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); int64(len(data)) != d.Size || got != d.Digest.String() {
		return nil, errorf(KindInvalid, nil, "the %s's bytes are not those of its descriptor (%d bytes, %s)", what, d.Size, d.Digest)
	}
	r.blobs[d.Digest] = data
	return data, nil
}

// classify turns an *Error of a signature's read into an outcome: the
// registry's failures stop Verify, any other makes the signature
// malformed.
func classify(err error) (outcome, error) {
	var e *Error
	if errors.As(err, &e) && e.Kind != KindRegistry {
		return outcome{result: malformed, detail: e.Message}, nil
	}
	return outcome{}, err
}

// shortList joins at most two items.
func shortList(items []string) string {
	switch {
	case len(items) == 0:
		return "nothing"
	case len(items) <= 2:
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, %s and %d more", items[0], items[1], len(items)-2)
}
