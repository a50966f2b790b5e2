package cosign

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// The legacy (tag) layout, as cosign writes it.
const (
	// SimpleSigningMediaType is the media type of a signature layer.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation is the layer annotation of the base64 signature.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// SignatureType is a payload's critical.type.
	SignatureType = "cosign container image signature"
)

// maxSignatureBytes bounds a signature (an RSA 4096 one is 512 bytes).
const maxSignatureBytes = 4 << 10

// payload is what a simple-signing payload says.
type payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// parsePayload reads a simple-signing payload: a JSON object of the cosign
// type that names a sha256 digest. It returns the digest.
func parsePayload(data []byte) (v1.Hash, error) {
	var p payload
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		return v1.Hash{}, fmt.Errorf("the payload is not a simple-signing JSON object: %s", echo(err.Error()))
	}
	if dec.More() {
		return v1.Hash{}, errors.New("the payload has data after its JSON object")
	}
	if p.Critical.Type != SignatureType {
		return v1.Hash{}, fmt.Errorf("the payload's critical.type is %q, not %q", echo(p.Critical.Type), SignatureType)
	}
	h, err := v1.NewHash(p.Critical.Image.DockerManifestDigest)
	if err != nil || h.Algorithm != "sha256" {
		return v1.Hash{}, fmt.Errorf("the payload's critical.image.docker-manifest-digest %q is not a sha256 digest", echo(p.Critical.Image.DockerManifestDigest))
	}
	return h, nil
}

// parseSignature decodes a layer's signature annotation.
func parseSignature(annotation string) ([]byte, error) {
	if annotation == "" {
		return nil, fmt.Errorf("no %s annotation", SignatureAnnotation)
	}
	if len(annotation) > base64.StdEncoding.EncodedLen(maxSignatureBytes) {
		return nil, fmt.Errorf("the %s annotation is %d bytes, more than the limit of %d", SignatureAnnotation, len(annotation), base64.StdEncoding.EncodedLen(maxSignatureBytes))
	}
	sig, err := base64.StdEncoding.DecodeString(annotation)
	if err != nil {
		return nil, fmt.Errorf("the %s annotation is not base64: %s", SignatureAnnotation, echo(err.Error()))
	}
	if len(sig) == 0 {
		return nil, fmt.Errorf("the %s annotation is empty", SignatureAnnotation)
	}
	return sig, nil
}

// listTag returns the signature layers of the sha256-<hex>.sig tag: none
// when there is no such tag. Its manifest is refused past the limit before
// it is read whole (Transport), and the first answer checks that the
// registry client reads through Transport (checkTransport).
func (r *run) listTag(ctx context.Context) ([]v1.Descriptor, error) {
	tag := r.sigTag()
	desc, err := r.puller.Get(ctx, tag)
	what := "the manifest of the signature tag " + tag.String()
	if e := tooLarge(err, what); e != nil {
		return nil, e
	}
	if err := r.checkTransport(err); err != nil {
		return nil, err
	}
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, errorf(KindRegistry, err, "reading the signature tag %s", tag)
	}
	if n := int64(len(desc.Manifest)); n > r.limits.MaxBytes {
		return nil, errorf(KindTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes", what, n, r.limits.MaxBytes)
	}
	if !desc.MediaType.IsImage() {
		return nil, errorf(KindInvalid, nil, "the signature tag %s is a %s, not an image manifest", tag, echo(string(desc.MediaType)))
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return nil, errorf(KindInvalid, nil, "the manifest of the signature tag %s is malformed: %s", tag, echo(err.Error()))
	}
	var layers []v1.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == SimpleSigningMediaType {
			layers = append(layers, l)
		}
	}
	return layers, nil
}

// checkTag checks one signature layer of the tag layout against each
// trusted key: its signature over its payload, then the payload's digest.
func (r *run) checkTag(ctx context.Context, layer v1.Descriptor) (outcome, error) {
	sig, err := parseSignature(layer.Annotations[SignatureAnnotation])
	if err != nil {
		return outcome{result: malformed, detail: "a signature layer: " + err.Error()}, nil
	}
	payload, err := r.readBlob(ctx, "signature payload", layer)
	if err != nil {
		return classify(err)
	}
	signed, err := parsePayload(payload)
	if err != nil {
		return outcome{result: malformed, detail: err.Error()}, nil
	}
	if r.keyless != nil {
		return r.checkTagKeyless(payload, sig, signed, layer.Annotations), nil
	}
	for _, key := range r.keys.unique {
		entity := &simpleSigning{payload: payload, signature: sig, key: keyHint{hint: key.fingerprint}}
		policy := verify.NewPolicy(verify.WithArtifact(bytes.NewReader(payload)), verify.WithKey())
		if _, err := r.verifier.Verify(entity, policy); err != nil {
			continue
		}
		if signed != r.digest {
			return outcome{result: otherDigest, key: key, detail: signed.String()}, nil
		}
		return outcome{result: verified, key: key}, nil
	}
	return outcome{result: wrongKey}, nil
}
