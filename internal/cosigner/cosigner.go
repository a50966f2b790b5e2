// Package cosigner writes cosign signatures of OCI artifacts, for the tests
// and `make run` (never the server): in the legacy layout (the
// sha256-<hex>.sig tag, as cosign v1/v2 write it) and as a Sigstore bundle
// v0.3 attached as an OCI referrer (as cosign v3 writes it by default),
// signed with a key of the caller's, without a transparency log entry or a
// timestamp, or keyless (Sigstore: a certificate of an OIDC identity from
// an instance in memory, with its log entry and timestamp). It can sign another digest than the one a signature is
// attached to, and attach malformed signatures, for the tests of
// pkg/cosign.
package cosigner

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	intoto "github.com/in-toto/attestation/go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// What cosign writes. Spelled out here again, not taken from pkg/cosign:
// the writer of the tests must not share a mistake with the verifier.
const (
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation    = "dev.cosignproject.cosign/signature"
	SignatureType          = "cosign container image signature"
	BundleMediaType        = "application/vnd.dev.sigstore.bundle.v0.3+json"
	SignPredicateType      = "https://sigstore.dev/cosign/sign/v1"
	emptyMediaType         = "application/vnd.oci.empty.v1+json"
	intotoPayloadType      = "application/vnd.in-toto+json"
)

// GenerateKey generates an ECDSA P-256 key (what cosign generate-key-pair
// makes), and the PEM of its public key.
func GenerateKey() (crypto.Signer, []byte, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	pubPEM, err := PublicKeyPEM(priv)
	if err != nil {
		return nil, nil, err
	}
	return priv, pubPEM, nil
}

// PublicKeyPEM is the PEM ("PUBLIC KEY") of priv's public key.
func PublicKeyPEM(priv crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// digestOf is ref's digest.
func digestOf(ref name.Digest) (v1.Hash, error) {
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return v1.Hash{}, fmt.Errorf("the digest of %s: %w", ref, err)
	}
	return h, nil
}

// SignTag signs ref's digest in the legacy layout: a simple-signing
// payload appended as a layer to the image of the tag sha256-<hex>.sig (made
// when there is none), as cosign sign does.
func SignTag(ctx context.Context, ref name.Digest, priv crypto.Signer, opts ...remote.Option) error {
	h, err := digestOf(ref)
	if err != nil {
		return err
	}
	return SignTagDigest(ctx, ref, h, priv, opts...)
}

// SignTagDigest is SignTag of a payload that names signed rather than
// attachTo's digest: a signature, attached to attachTo, of another digest.
func SignTagDigest(ctx context.Context, attachTo name.Digest, signed v1.Hash, priv crypto.Signer, opts ...remote.Option) error {
	return SignTagPayload(ctx, attachTo, Payload(attachTo.Context(), signed), priv, opts...)
}

// Payload is the simple-signing payload cosign writes for digest in repo.
func Payload(repo name.Repository, digest v1.Hash) []byte {
	// Not pkg/cosign's type (see the constants above).
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
	var p payload
	p.Critical.Identity.DockerReference = repo.Name()
	p.Critical.Image.DockerManifestDigest = digest.String()
	p.Critical.Type = SignatureType
	data, _ := json.Marshal(p) // cannot fail: strings only
	return data
}

// SignTagPayload signs payload as it is (a test's malformed one too) and
// attaches it in the legacy layout to attachTo.
func SignTagPayload(ctx context.Context, attachTo name.Digest, payload []byte, priv crypto.Signer, opts ...remote.Option) error {
	signer, err := signature.LoadDefaultSigner(priv)
	if err != nil {
		return fmt.Errorf("loading the key: %w", err)
	}
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	return AttachTag(ctx, attachTo, payload, base64.StdEncoding.EncodeToString(sig), opts...)
}

// SigTag is the legacy signature tag of ref: sha256-<hex>.sig.
func SigTag(ref name.Digest) name.Tag {
	return ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
}

// AttachTag appends a layer of payload, with signature (base64) in its
// annotation, to the image of attachTo's .sig tag, as it is.
func AttachTag(ctx context.Context, attachTo name.Digest, payload []byte, signatureB64 string, opts ...remote.Option) error {
	return AttachTagAnnotated(ctx, attachTo, payload, map[string]string{SignatureAnnotation: signatureB64}, opts...)
}

// AttachTagAnnotated is AttachTag of a layer of these annotations (the
// signature's, and a keyless signature's certificate and evidence).
func AttachTagAnnotated(ctx context.Context, attachTo name.Digest, payload []byte, annotations map[string]string, opts ...remote.Option) error {
	tag := SigTag(attachTo)
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	base, err := remote.Image(tag, opts...)
	var terr *transport.Error
	switch {
	case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	case err != nil:
		return fmt.Errorf("reading %s: %w", tag, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(payload, SimpleSigningMediaType),
		MediaType:   SimpleSigningMediaType,
		Annotations: annotations,
	})
	if err != nil {
		return fmt.Errorf("appending the signature: %w", err)
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return fmt.Errorf("writing %s: %w", tag, err)
	}
	return nil
}

// SignReferrer signs ref's digest as cosign v3 does: a Sigstore bundle
// (Bundle) attached to ref as an OCI referrer (AttachReferrer).
func SignReferrer(ctx context.Context, ref name.Digest, priv crypto.Signer, opts ...remote.Option) error {
	h, err := digestOf(ref)
	if err != nil {
		return err
	}
	return SignReferrerDigest(ctx, ref, h, priv, opts...)
}

// SignReferrerDigest is SignReferrer of a bundle whose statement's subject
// is signed rather than attachTo's digest.
func SignReferrerDigest(ctx context.Context, attachTo name.Digest, signed v1.Hash, priv crypto.Signer, opts ...remote.Option) error {
	data, err := Bundle(ctx, attachTo.Context(), signed, priv)
	if err != nil {
		return err
	}
	return AttachReferrer(ctx, attachTo, data, opts...)
}

// Bundle is the JSON of a Sigstore bundle v0.3 of a cosign v3 signature of
// digest in repo: a DSSE envelope of an in-toto statement (predicate type
// SignPredicateType, subject repo with digest), verified by a public key
// (hint: base64 of the SHA-256 of its DER), without a transparency log
// entry or a timestamp (sigstore-go requires neither of a bundle).
func Bundle(ctx context.Context, repo name.Repository, digest v1.Hash, priv crypto.Signer) ([]byte, error) {
	return StatementBundle(ctx, repo, digest, SignPredicateType, priv)
}

// StatementBundle is Bundle of a statement of predicateType (an
// attestation, unless SignPredicateType), with an empty predicate.
func StatementBundle(ctx context.Context, repo name.Repository, digest v1.Hash, predicateType string, priv crypto.Signer) ([]byte, error) {
	statement, err := protojson.Marshal(&intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       []*intoto.ResourceDescriptor{{Name: repo.Name(), Digest: map[string]string{digest.Algorithm: digest.Hex}}},
		PredicateType: predicateType,
		Predicate:     &structpb.Struct{},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the statement: %w", err)
	}
	kp, err := newKeypair(priv)
	if err != nil {
		return nil, err
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: intotoPayloadType}, kp, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("signing the bundle: %w", err)
	}
	return protojson.Marshal(pb)
}

// MessageBundle is the JSON of a Sigstore bundle v0.3 of a message
// signature of digest (a signature of the digest itself, as cosign
// sign-blob makes of a blob), verified by priv's public key.
func MessageBundle(digest v1.Hash, priv crypto.Signer) ([]byte, error) {
	raw, err := hexDigest(digest)
	if err != nil {
		return nil, err
	}
	kp, err := newKeypair(priv)
	if err != nil {
		return nil, err
	}
	sig, err := priv.Sign(rand.Reader, raw, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	pb := &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: string(kp.GetHint())}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: raw},
			Signature:     sig,
		}},
	}
	return protojson.Marshal(pb)
}

func hexDigest(h v1.Hash) ([]byte, error) {
	raw, err := hex.DecodeString(h.Hex)
	if err != nil || h.Algorithm != "sha256" || len(raw) != sha256.Size {
		return nil, fmt.Errorf("%s is not a sha256 digest", h)
	}
	return raw, nil
}

// AttachReferrer attaches bundleJSON, as it is, to attachTo as cosign v3
// does: an OCI image manifest of artifactType BundleMediaType, the empty
// config, one layer (the bundle) and attachTo as its subject; on a registry
// without the referrers API, go-containerregistry adds it to the index of
// the referrers tag schema (sha256-<hex>).
func AttachReferrer(ctx context.Context, attachTo name.Digest, bundleJSON []byte, opts ...remote.Option) error {
	return attachReferrer(ctx, attachTo, bundleJSON, true, opts...)
}

// AttachReferrerUnannotated is AttachReferrer without the manifest's
// annotations (its predicate type among them), as tools other than cosign
// may write it: a verifier must read the bundle to tell what it is.
func AttachReferrerUnannotated(ctx context.Context, attachTo name.Digest, bundleJSON []byte, opts ...remote.Option) error {
	return attachReferrer(ctx, attachTo, bundleJSON, false, opts...)
}

func attachReferrer(ctx context.Context, attachTo name.Digest, bundleJSON []byte, annotate bool, opts ...remote.Option) error {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	subject, err := remote.Head(attachTo, opts...)
	if err != nil {
		return fmt.Errorf("reading %s: %w", attachTo, err)
	}
	layer := static.NewLayer(bundleJSON, BundleMediaType)
	config := static.NewLayer([]byte("{}"), emptyMediaType)
	for _, l := range []v1.Layer{layer, config} {
		if err := remote.WriteLayer(attachTo.Context(), l, opts...); err != nil {
			return fmt.Errorf("writing a blob: %w", err)
		}
	}
	layerDesc, err := descriptor(layer, BundleMediaType)
	if err != nil {
		return err
	}
	layerDesc.Annotations = map[string]string{"org.opencontainers.image.title": strings.Replace(layerDesc.Digest.String(), ":", "-", 1) + ".sigstore.json"}
	configDesc, err := descriptor(config, emptyMediaType)
	if err != nil {
		return err
	}
	manifest := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  BundleMediaType,
		Config:        configDesc,
		Layers:        []v1.Descriptor{layerDesc},
		Subject:       &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
	}
	if annotate {
		manifest.Annotations = bundleAnnotations(bundleJSON)
	}
	raw, err := json.Marshal(manifest)
	if err != nil {
		return fmt.Errorf("encoding the manifest: %w", err)
	}
	digest, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := remote.Put(attachTo.Context().Digest(digest.String()), RawManifest{Raw: raw, Type: types.OCIManifestSchema1}, opts...); err != nil {
		return fmt.Errorf("writing the referrer: %w", err)
	}
	return nil
}

// bundleAnnotations are the annotations cosign gives the manifest of
// bundleJSON: its content, the predicate type of its statement, its time.
func bundleAnnotations(bundleJSON []byte) map[string]string {
	out := map[string]string{"org.opencontainers.image.created": time.Now().UTC().Format(time.RFC3339)}
	var b bundle.Bundle
	if b.UnmarshalJSON(bundleJSON) != nil {
		return out
	}
	if b.GetMessageSignature() != nil {
		out["dev.sigstore.bundle.content"] = "message-signature"
		return out
	}
	out["dev.sigstore.bundle.content"] = "dsse-envelope"
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if env := b.GetDsseEnvelope(); env != nil && json.Unmarshal(env.GetPayload(), &st) == nil && st.PredicateType != "" {
		out["dev.sigstore.bundle.predicateType"] = st.PredicateType
	}
	return out
}

func descriptor(l v1.Layer, mediaType types.MediaType) (v1.Descriptor, error) {
	d, err := l.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	n, err := l.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mediaType, Digest: d, Size: n}, nil
}

// RawManifest is a manifest to remote.Put as it is.
type RawManifest struct {
	Raw  []byte
	Type types.MediaType
}

func (m RawManifest) RawManifest() ([]byte, error)        { return m.Raw, nil }
func (m RawManifest) MediaType() (types.MediaType, error) { return m.Type, nil }

// keypair is a sigstore-go sign.Keypair of a key of the caller's.
type keypair struct {
	priv    crypto.Signer
	hint    []byte
	details signature.AlgorithmDetails
}

var _ sign.Keypair = (*keypair)(nil)

func newKeypair(priv crypto.Signer) (*keypair, error) {
	details, err := signature.GetDefaultAlgorithmDetails(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("the key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return &keypair{priv: priv, hint: []byte(base64.StdEncoding.EncodeToString(sum[:])), details: details}, nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.details.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.details.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte                { return k.hint }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.priv.Public() }

func (k *keypair) GetKeyAlgorithm() string {
	switch k.details.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	data, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	return string(data), err
}

// SignData signs data: a digest of it (RSA, ECDSA), or data itself (pure
// Ed25519).
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.details.GetHashType()
	toSign := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	}
	sig, err := k.priv.Sign(rand.Reader, toSign, hf)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	return sig, toSign, nil
}
