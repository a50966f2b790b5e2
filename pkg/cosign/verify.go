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

// Signer names the key of the signature that verified.
type Signer struct {
	// Key is the name of the key's entry (e.g. ci.pub).
	Key string
	// Fingerprint is sha256:<hex> of the key's DER SubjectPublicKeyInfo.
	Fingerprint string
	// Layout is LayoutTag or LayoutReferrer.
	Layout string
}

// Verify finds the cosign signatures of ref (a repository and the digest
// the caller resolved) in both layouts, and returns the key of the first
// one (tag layout first, then referrers, each in the registry's order)
// that a key of keys made of exactly ref's digest. Otherwise it returns an
// *Error: KindNoSignature, KindWrongKey, KindOtherDigest (before
// KindWrongKey when both apply), KindTooMany, KindInvalid (every signature
// malformed, a malformed listing, or one past limits.MaxBytes) or
// KindRegistry (at once, whatever signatures were left to check).
func Verify(ctx context.Context, puller *remote.Puller, ref name.Digest, keys *Keys, limits Limits) (*Signer, error) {
	if puller == nil {
		return nil, errorf(KindInvalid, nil, "no registry client")
	}
	if keys == nil || len(keys.keys) == 0 {
		return nil, errorf(KindInvalid, nil, "no trusted key")
	}
	digest, err := v1.NewHash(ref.DigestStr())
	if err != nil || digest.Algorithm != "sha256" {
		return nil, errorf(KindInvalid, err, "%s is not a sha256 digest", echo(ref.DigestStr()))
	}
	digestBytes, err := hex.DecodeString(digest.Hex)
	if err != nil {
		return nil, errorf(KindInvalid, err, "%s is not a sha256 digest", echo(ref.DigestStr()))
	}
	sv, err := verify.NewVerifier(keys.trusted, verify.WithNoObserverTimestamps(), verify.WithoutStatementPredicate())
	if err != nil {
		return nil, fmt.Errorf("configuring the signature verifier: %w", err)
	}
	r := &run{
		puller:      puller,
		ref:         ref,
		digest:      digest,
		digestBytes: digestBytes,
		keys:        keys,
		limits:      limits.withDefaults(),
		verifier:    sv,
		blobs:       map[v1.Hash][]byte{},
	}
	return r.verify(ctx)
}

// run is one Verify.
type run struct {
	puller      *remote.Puller
	ref         name.Digest
	digest      v1.Hash
	digestBytes []byte
	keys        *Keys
	limits      Limits
	verifier    *verify.Verifier
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
)

// outcome is what checking one signature found.
type outcome struct {
	result result
	key    *trustedKey
	// detail: for otherDigest, what it signs; for malformed, why.
	detail string
}

func (r *run) verify(ctx context.Context) (*Signer, error) {
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
			return &Signer{Key: o.key.name, Fingerprint: o.key.fingerprint, Layout: LayoutTag}, nil
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
			return &Signer{Key: o.key.name, Fingerprint: o.key.fingerprint, Layout: LayoutReferrer}, nil
		}
		outcomes = append(outcomes, o)
		layouts = append(layouts, LayoutReferrer)
	}
	return nil, r.verdict(outcomes, layouts)
}

// verdict is the error of signatures none of which verified.
func (r *run) verdict(outcomes []outcome, layouts []string) *Error {
	var tried, bad int
	firstBad := ""
	for i, o := range outcomes {
		switch o.result {
		case otherDigest:
			return errorf(KindOtherDigest, nil, "the signature (%s layout) by the trusted key %s (%s) signs %s, not %s",
				layouts[i], echo(o.key.name), o.key.fingerprint, o.detail, r.digest)
		case wrongKey:
			tried++
		case malformed:
			if bad == 0 {
				firstBad = o.detail
			}
			bad++
		}
	}
	switch {
	case tried > 0:
		msg := fmt.Sprintf("%d signature(s) of %s tried, none verifies with the trusted keys %s", tried, r.digest, r.keys.describe())
		if bad > 0 {
			msg += fmt.Sprintf("; %d more malformed: %s", bad, firstBad)
		}
		return errorf(KindWrongKey, nil, "%s", msg)
	case bad > 0:
		return errorf(KindInvalid, nil, "%d malformed signature(s) of %s: %s", bad, r.digest, firstBad)
	}
	return errorf(KindNoSignature, nil, "no signature of %s in %s (its referrers are not signatures)", r.digest, r.ref.Context().Name())
}

// sigTag is the legacy signature tag of ref: sha256-<hex>.sig.
func (r *run) sigTag() name.Tag {
	return r.ref.Context().Tag(r.digest.Algorithm + "-" + r.digest.Hex + ".sig")
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
		return nil, errorf(KindInvalid, nil, "the %s %s is %d bytes, more than the limit of %d bytes", what, d.Digest, d.Size, r.limits.MaxBytes)
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
