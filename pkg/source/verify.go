package source

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/name"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonSignatureUnverified is an artifact whose signature a Release asks
// for and that has none that verifies: nothing of it is rendered.
var ReasonSignatureUnverified = failure.Declare(failure.Reason{
	Name: "SignatureUnverified", Class: failure.ClassForbidden, Shows: failure.InSyncAndResponse, Refusal: true,
	Means: "spec.source.ociRepository.verify asks for a signature and the digest the source resolved to has none that verifies with the keys of its Secret " +
		"(no signature, another key, a signature of another digest, too many signatures, no public key in the Secret): nothing of the artifact was rendered, compared or shown",
	Action: "sign the digest the message names with one of the keys (cosign sign --key), or add the signer's public key (a key ending in .pub) to the Secret",
})

// ProviderCosign is the one provider of signatures.
const ProviderCosign = "cosign"

// The outcomes of verifications.
const (
	verifyVerified   = "verified"
	verifyUnverified = "unverified"
	verifyFailure    = "failure"
)

var verifications = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_source",
	Name:      "verifications_total",
	Help: "Verifications of the signatures of Releases' artifacts (spec.source.ociRepository.verify), by provider (cosign) and outcome (verified; unverified: " +
		"SignatureUnverified, nothing rendered; failure: the registry or the Secret could not be read). The verdict cache serves repeated ones (convoy_cache_lookups_total{cache=\"signature\"}).",
	StabilityLevel: metrics.ALPHA,
}, []string{"provider", "outcome"})

// cosignKinds are the cosign failures that are SignatureUnverified; any
// other (the registry) keeps the registry's reason.
var cosignKinds = map[cosign.Kind]bool{
	cosign.KindNoSignature: true, cosign.KindWrongKey: true, cosign.KindOtherDigest: true, cosign.KindTooMany: true, cosign.KindInvalid: true,
}

// verifyOCI verifies the signatures of the artifact ref, which resolveOCI
// resolved (r: its repository, client and credentials), with the policy
// of src.Verify, and returns the signature it verified with. The verdict
// is kept for ResolveMaxAge by namespace, origin, digest, provider and the
// digest of the keys: never across namespaces or trust material. The
// caller fetches the same digest: nothing is resolved again in between.
func (f *Fetcher) verifyOCI(ctx context.Context, namespace string, src *convoyv1alpha1.OCIRepositorySource, inputs Inputs, r *ociResolution, ref name.Digest, where string) (*subresourcesv1alpha1.SourceSignature, error) {
	v := src.Verify
	provider := v.Provider
	sig, err := f.verify(ctx, namespace, v, inputs, r, ref, where)
	outcome := verifyVerified
	switch {
	case failure.ReasonOf(err) == ReasonSignatureUnverified:
		outcome = verifyUnverified
	case err != nil:
		outcome = verifyFailure
	}
	verifications.WithLabelValues(provider, outcome).Inc()
	return sig, err
}

func (f *Fetcher) verify(ctx context.Context, namespace string, v *convoyv1alpha1.OCIVerification, inputs Inputs, r *ociResolution, ref name.Digest, where string) (*subresourcesv1alpha1.SourceSignature, error) {
	if v.Provider != ProviderCosign {
		return nil, failure.New(ReasonSourceInvalid, nil, "verify.provider %q is not cosign", v.Provider)
	}
	if v.SecretRef == nil {
		return nil, failure.New(ReasonSignatureUnverified, nil, "%s: verify names no secretRef of public keys (keyless verification is not built)", where)
	}
	secretWhere := "verify.secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: v.SecretRef.Name}.Describe()
	s, err := inputs.Secret(ctx, namespace, v.SecretRef.Name)
	switch {
	case apierrors.IsNotFound(err):
		// No key, no verification: the artifact's reason, not the
		// credentials'.
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s not found: no public key to verify with", where, secretWhere)
	case apierrors.IsForbidden(err):
		return nil, failure.New(ReasonInputForbidden, err, "%s may not be read", secretWhere)
	case err != nil:
		return nil, Unavailable(err, "%s could not be read", secretWhere)
	}
	keys, err := cosign.ParseKeys(s.Data)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", where, secretWhere, err.Error())
	}
	key := "verify\x00" + namespace + "\x00" + r.repo.String() + "\x00" + ref.DigestStr() + "\x00" + v.Provider + "\x00" + keys.Digest()
	if sig, ok := f.getSignature(key); f.countSignatureLookup(ok) {
		return sig, nil
	}
	got, err := f.shared(ctx, namespace, key, func(ctx context.Context) (any, error) {
		if sig, ok := f.getSignature(key); ok {
			return sig, nil
		}
		signer, err := cosign.Verify(ctx, r.puller, ref, keys, f.opts.Signatures)
		if err != nil {
			return nil, cosignFailure(where, err)
		}
		sig := &subresourcesv1alpha1.SourceSignature{Provider: ProviderCosign, Key: signer.Key, Fingerprint: signer.Fingerprint, Layout: signer.Layout}
		f.putSignature(key, sig)
		return sig, nil
	})
	if err != nil {
		return nil, err
	}
	return got.(*subresourcesv1alpha1.SourceSignature), nil
}

// cosignFailure is err of cosign.Verify as a *failure.Error:
// SignatureUnverified, or the registry's own failure.
func cosignFailure(where string, err error) error {
	e, ok := errors.AsType[*cosign.Error](err)
	switch {
	case !ok:
		return failure.New(failure.ReasonInternalError, err, "%s: verifying the signatures", where)
	case cosignKinds[e.Kind]:
		return failure.Quiet(ReasonSignatureUnverified, err, "%s: %s", where, e.Message)
	}
	return registryFailure(where+": reading the signatures", e.Err)
}

// countSignatureLookup counts a lookup of the verdict cache.
func (f *Fetcher) countSignatureLookup(hit bool) bool {
	return f.countLookup(agecache.CacheSignature, hit)
}
