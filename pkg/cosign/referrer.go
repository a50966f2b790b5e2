package cosign

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/kumodo/convoy-apiserver/pkg/errtext"
)

// The referrer layout, as cosign v3 writes it.
const (
	// SignPredicateType is the in-toto predicate type of a cosign v3
	// signature.
	SignPredicateType = "https://sigstore.dev/cosign/sign/v1"
	// PredicateTypeAnnotation is the annotation of a bundle referrer that
	// names its statement's predicate type.
	PredicateTypeAnnotation = "dev.sigstore.bundle.predicateType"
	// emptyMediaType is the config of an artifact without one: some
	// registries (go-containerregistry's pkg/registry among them) list a
	// referrer's config media type as its artifactType.
	emptyMediaType = "application/vnd.oci.empty.v1+json"
	intotoPayload  = "application/vnd.in-toto+json"
)

// BundleMediaTypes are the media types of the Sigstore bundles Verify
// reads.
var BundleMediaTypes = []string{
	"application/vnd.dev.sigstore.bundle.v0.3+json",
	"application/vnd.dev.sigstore.bundle+json;version=0.3",
	"application/vnd.dev.sigstore.bundle+json;version=0.2",
	"application/vnd.dev.sigstore.bundle+json;version=0.1",
}

func isBundle(mediaType string) bool { return slices.Contains(BundleMediaTypes, mediaType) }

// listReferrers returns the referrers of ref that may be signatures:
// those of a bundle artifactType, and those of none or of the empty
// config's (read to tell), but not those annotated with another predicate
// type (attestations). The index (of the referrers API, or of the
// referrers tag schema's tag) is refused past the limit before it is read
// whole (Transport).
func (r *run) listReferrers(ctx context.Context) ([]v1.Descriptor, error) {
	what := "the referrers index of " + r.digest.String()
	idx, err := remote.Referrers(r.ref, remote.Reuse(r.puller), remote.WithContext(ctx))
	if e := tooLarge(err, what); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, errorf(KindRegistry, err, "listing the referrers of %s", r.digest)
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, errorf(KindRegistry, err, "listing the referrers of %s", r.digest)
	}
	if n := int64(len(raw)); n > r.limits.MaxBytes {
		return nil, errorf(KindTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes", what, n, r.limits.MaxBytes)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, errorf(KindInvalid, nil, "the referrers index of %s is malformed: %s", r.digest, echo(err.Error()))
	}
	var out []v1.Descriptor
	for _, d := range im.Manifests {
		if pt, ok := d.Annotations[PredicateTypeAnnotation]; ok && pt != SignPredicateType {
			continue
		}
		if !d.MediaType.IsImage() {
			continue
		}
		if isBundle(d.ArtifactType) || d.ArtifactType == "" || d.ArtifactType == emptyMediaType {
			out = append(out, d)
		}
	}
	return out, nil
}

// checkReferrer reads one referrer and, when it is a bundle of a cosign
// signature, checks it against each trusted key.
func (r *run) checkReferrer(ctx context.Context, d v1.Descriptor) (outcome, error) {
	b, gone, err := r.readBundle(ctx, d)
	if err != nil {
		return classify(err)
	}
	if gone {
		return outcome{result: notSignature}, nil
	}
	content, err := b.SignatureContent()
	if err != nil {
		return outcome{result: malformed, detail: fmt.Sprintf("the bundle of referrer %s: %s", d.Digest, echo(err.Error()))}, nil
	}
	envelope := content.EnvelopeContent()
	if envelope != nil {
		pt, err := predicateType(envelope)
		if err != nil {
			return outcome{result: malformed, detail: fmt.Sprintf("the bundle of referrer %s: %s", d.Digest, err)}, nil
		}
		if pt != SignPredicateType {
			return outcome{result: notSignature}, nil
		}
	}
	if r.keyless != nil {
		return r.checkBundleKeyless(b, content, d), nil
	}
	for _, key := range r.keys.unique {
		entity := &keyedBundle{Bundle: b, key: keyHint{hint: key.fingerprint}}
		policy := verify.NewPolicy(verify.WithArtifactDigest("sha256", r.digestBytes), verify.WithKey())
		if _, err := r.verifier.Verify(entity, policy); err == nil {
			return outcome{result: verified, key: key}, nil
		}
	}
	// None signs ref's digest: does a trusted key sign another?
	for _, key := range r.keys.unique {
		entity := &keyedBundle{Bundle: b, key: keyHint{hint: key.fingerprint}}
		if envelope != nil {
			res, err := r.verifier.Verify(entity, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithKey()))
			if err == nil {
				return outcome{result: otherDigest, key: key, detail: subjects(res)}, nil
			}
			continue
		}
		msg := content.MessageSignatureContent()
		if msg == nil {
			break
		}
		policy := verify.NewPolicy(verify.WithArtifactDigest(msg.DigestAlgorithm(), msg.Digest()), verify.WithKey())
		if _, err := r.verifier.Verify(entity, policy); err == nil {
			return outcome{result: otherDigest, key: key, detail: hashName(msg.DigestAlgorithm()) + ":" + hex.EncodeToString(msg.Digest())}, nil
		}
	}
	return outcome{result: wrongKey}, nil
}

// readBundle reads the manifest of referrer d, then its bundle. gone: the
// manifest is no longer there, or is not a bundle's.
func (r *run) readBundle(ctx context.Context, d v1.Descriptor) (b *bundle.Bundle, gone bool, err error) {
	what := "the referrer manifest " + d.Digest.String()
	if d.Size > r.limits.MaxBytes {
		return nil, false, errorf(KindTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes", what, d.Size, r.limits.MaxBytes)
	}
	desc, err := r.puller.Get(ctx, r.ref.Context().Digest(d.Digest.String()))
	if e := tooLarge(err, what); e != nil {
		return nil, false, e
	}
	switch {
	case notFound(err):
		return nil, true, nil
	case errtext.DigestMismatch(err):
		return nil, false, errorf(KindInvalid, nil, "the referrer manifest %s is not the one of its digest", d.Digest)
	case err != nil:
		return nil, false, errorf(KindRegistry, err, "reading the referrer manifest %s", d.Digest)
	}
	if n := int64(len(desc.Manifest)); n > r.limits.MaxBytes {
		return nil, false, errorf(KindTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes", what, n, r.limits.MaxBytes)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return nil, false, errorf(KindInvalid, nil, "the referrer manifest %s is malformed: %s", d.Digest, echo(err.Error()))
	}
	if !isBundle(m.ArtifactType) && (m.ArtifactType != "" || !isBundle(string(m.Config.MediaType))) {
		return nil, true, nil
	}
	if len(m.Layers) != 1 || !isBundle(string(m.Layers[0].MediaType)) {
		return nil, false, errorf(KindInvalid, nil, "the referrer manifest %s has not one layer of a bundle media type", d.Digest)
	}
	data, err := r.readBlob(ctx, "bundle", m.Layers[0])
	if err != nil {
		return nil, false, err
	}
	b = &bundle.Bundle{}
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, false, errorf(KindInvalid, nil, "the bundle of referrer %s is malformed: %s", d.Digest, echo(err.Error()))
	}
	return b, false, nil
}

// predicateType is the predicate type of the in-toto statement of a DSSE
// envelope, read before its signature is checked (to tell a signature from
// an attestation).
func predicateType(envelope verify.EnvelopeContent) (string, error) {
	env := envelope.RawEnvelope()
	if env == nil {
		return "", errors.New("no DSSE envelope")
	}
	if env.PayloadType != intotoPayload {
		return "", fmt.Errorf("a DSSE payload of type %q, not %s", echo(env.PayloadType), intotoPayload)
	}
	raw, err := env.DecodeB64Payload()
	if err != nil {
		return "", fmt.Errorf("the DSSE payload is not base64: %s", echo(err.Error()))
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return "", fmt.Errorf("the DSSE payload is not an in-toto statement: %s", echo(err.Error()))
	}
	return st.PredicateType, nil
}

// subjects names the sha256 digests of a verified statement's subjects.
func subjects(res *verify.VerificationResult) string {
	var out []string
	if res != nil && res.Statement != nil {
		for _, s := range res.Statement.GetSubject() {
			d := s.GetDigest()["sha256"]
			if b, err := hex.DecodeString(d); err == nil && len(b) == 32 {
				out = append(out, "sha256:"+d)
			}
		}
	}
	if len(out) == 0 {
		return "a statement without a sha256 subject"
	}
	sort.Strings(out)
	return shortList(out)
}

// hashName is the OCI name of a sigstore hash algorithm.
func hashName(alg string) string {
	switch alg {
	case "SHA2_256":
		return "sha256"
	case "SHA2_384":
		return "sha384"
	case "SHA2_512":
		return "sha512"
	}
	return echo(alg)
}
