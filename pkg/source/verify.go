package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
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
	Means: "spec.source.ociRepository.verify asks for a signature and the digest the source resolved to has none that verifies: with keys, none by a key of its Secret " +
		"(no signature, another key, a signature of another digest, too many signatures, a signature manifest or referrers index past 1 MiB, no public key in the Secret); " +
		"keyless, none by a certificate of the trust root " +
		"and of an expected identity (another issuer or subject, a certificate of another root, no log entry or timestamp the root requires, no usable trust root): " +
		"nothing of the artifact was rendered, compared or shown; the verdict is kept for 30 seconds (a refresh asks again). Also a stored render (pinned, last " +
		"healthy, ?render=) whose Secret names no revision of the Release's source (annotation convoy.kumodo.io/resolved-source), one of another repository, or a " +
		"digest that does not verify now: none of its objects is compared",
	Action: "sign the digest the message names with one of the keys (cosign sign --key) or in the CI whose identity matchOIDCIdentity expects, " +
		"or trust the signer: add its public key (a key ending in .pub) to the Secret, or its issuer and subject to matchOIDCIdentity; " +
		"for a stored render, pin a render convoy's controller stored from a signed digest (a Secret planted by anyone else is refused by " +
		"artifacts/admission/protect-render-store.yaml), or remove the pin",
})

// TrustRootKey is the key of a trustedRootSecretRef Secret.
const TrustRootKey = "trusted_root.json"

// PublicTrustRoot gives the public Sigstore instance's trust root (the
// one outbound connection that no tenant chooses: sigstoreroot).
type PublicTrustRoot interface {
	TrustRoot(ctx context.Context) (*cosign.TrustRoot, error)
}

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

// trustRootFetches counts the fetches of the public Sigstore trust root.
var trustRootFetches = metricSet.CounterVec(&metrics.CounterOpts{
	Subsystem: "convoy_source",
	Name:      "public_trust_root_fetches_total",
	Help: "Fetches of the public Sigstore trust root from --sigstore-tuf-mirror (only with --sigstore-public-trust-root: on first use, then daily), by outcome " +
		"(success; failure: the copy in memory is kept, tried again a minute later). The one outbound connection that no tenant chooses.",
	StabilityLevel: metrics.ALPHA,
}, []string{"outcome"})

func countTrustRootFetch(err error) {
	outcome := "success"
	if err != nil {
		outcome = "failure"
	}
	trustRootFetches.WithLabelValues(outcome).Inc()
}

// cosignKinds are the cosign failures that are SignatureUnverified; any
// other (the registry) keeps the registry's reason. A signature manifest
// or a referrers index past its limit (KindTooLarge) is one: what the
// registry holds has no signature that can be verified, as with too many
// signatures; --max-artifact-bytes, the artifact's limit, has no say.
var cosignKinds = map[cosign.Kind]bool{
	cosign.KindNoSignature: true, cosign.KindWrongKey: true, cosign.KindOtherDigest: true, cosign.KindTooMany: true, cosign.KindInvalid: true,
	cosign.KindWrongIdentity: true, cosign.KindUntrusted: true, cosign.KindTooLarge: true,
}

// verifies reports whether release asks for signatures of its source
// (spec.source.ociRepository.verify): then neither a fresh render nor a
// stored one reaches a compare unless what it was made from verifies.
func verifies(release *convoyv1alpha1.Release) bool {
	oci := release.Spec.Source.OCIRepository
	return oci != nil && oci.Verify != nil
}

// VerifyRevision verifies that resolved, the revision of its source a
// stored render of release names (render.Store.Get), is a revision of the
// Release's source as it is now that verifies now under its policy, as a
// fresh render's must: the same repository, and a digest signed as verify
// asks (the verdict cache serves it as it serves fresh renders). A stored
// render that names no revision, or one of another source, is
// SignatureUnverified: nothing of it is compared. A Release that asks for
// no signature gives nil, nil. The revision is what the render's Secret
// says: that it is what the render was made from rests on who may write
// render Secrets (artifacts/admission/protect-render-store.yaml).
func (f *Fetcher) VerifyRevision(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.SourceSignature, error) {
	if !verifies(release) {
		return nil, nil
	}
	src := release.Spec.Source.OCIRepository
	switch {
	case resolved == nil:
		return nil, countRefusal(failure.New(ReasonSignatureUnverified, nil, "%s asks for signatures, and the stored render names no revision of its source "+
			"(the annotation %s of its Secret): it cannot be verified", src.URL, convoyv1alpha1.AnnotationResolvedSource))
	case resolved.Kind != KindOCIRepository || resolved.URL != src.URL:
		return nil, countRefusal(failure.New(ReasonSignatureUnverified, nil, "the stored render was made from %s %s, not from the Release's source %s: "+
			"it cannot be verified under the Release's verify", resolved.Kind, resolved.URL, src.URL))
	}
	digest, err := v1.NewHash(resolved.Digest)
	if err != nil || digest.Algorithm != "sha256" {
		return nil, countRefusal(failure.New(ReasonSignatureUnverified, nil, "the stored render names %s@%q, not a sha256 digest: it cannot be verified", src.URL, resolved.Digest))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.opts.Timeout, errFetchTimeout)
	defer cancel()
	byDigest := *src
	byDigest.Tag, byDigest.Digest = "", digest.String()
	r, err := f.resolveOCI(ctx, release.Namespace, &byDigest, inputs)
	if err != nil {
		return nil, countRefusal(f.timedOut(ctx, err))
	}
	where := src.URL + "@" + digest.String() + " (a stored render's source)"
	sig, err := f.verifyOCI(ctx, release.Namespace, src, inputs, r, r.repo.Digest(digest.String()), where)
	if err != nil {
		return nil, countRefusal(f.timedOut(ctx, err))
	}
	return sig, nil
}

// UnverifiedMaxAge is how long a verdict of SignatureUnverified is kept (at
// most ResolveMaxAge), by the key of the verified ones: a loop of GET /diff
// of a Release whose registry serves no signature that verifies (or a
// signature manifest of 30 MiB) reads it once, not at each request. Short,
// so that a digest signed since verifies soon; a refresh asks again.
const UnverifiedMaxAge = 30 * time.Second

// verifyOCI verifies the signatures of the artifact ref, which resolveOCI
// resolved (r: its repository, client and credentials), with the policy
// of src.Verify, and returns the signature it verified with. The verdict
// is kept for ResolveMaxAge by namespace, origin, digest, provider and the
// digest of the policy (keys, or trust root and identities): never across
// namespaces or trust material. The
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
	if len(v.MatchOIDCIdentity) > 0 {
		return f.verifyKeyless(ctx, namespace, v, inputs, r, ref, where)
	}
	if v.SecretRef == nil {
		return nil, failure.New(ReasonSignatureUnverified, nil, "%s: verify names neither a secretRef of public keys nor matchOIDCIdentity", where)
	}
	secretWhere := "verify.secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: v.SecretRef.Name}.Describe()
	s, err := f.readVerifySecret(ctx, namespace, v.SecretRef.Name, inputs, where, secretWhere)
	if err != nil {
		return nil, err
	}
	keys, err := cosign.ParseKeys(s.Data)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", where, secretWhere, err.Error())
	}
	return f.verdict(ctx, namespace, r, ref, "keys\x00"+keys.Digest(), where, func(ctx context.Context) (*cosign.Signer, error) {
		return cosign.Verify(ctx, r.puller, ref, keys, f.opts.Signatures)
	})
}

// verifyKeyless verifies with v's keyless policy: the trust root of
// trustedRootSecretRef, or the public one where the server allows it.
func (f *Fetcher) verifyKeyless(ctx context.Context, namespace string, v *convoyv1alpha1.OCIVerification, inputs Inputs, r *ociResolution, ref name.Digest, where string) (*subresourcesv1alpha1.SourceSignature, error) {
	trust, err := f.trustRoot(ctx, namespace, v, inputs, where)
	if err != nil {
		return nil, err
	}
	ids := make([]cosign.Identity, 0, len(v.MatchOIDCIdentity))
	for _, m := range v.MatchOIDCIdentity {
		ids = append(ids, cosign.Identity{Issuer: m.Issuer, Subject: m.Subject})
	}
	keyless, err := cosign.NewKeyless(trust, ids)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: verify.matchOIDCIdentity: %s", where, err.Error())
	}
	return f.verdict(ctx, namespace, r, ref, "keyless\x00"+keyless.Digest(), where, func(ctx context.Context) (*cosign.Signer, error) {
		return cosign.VerifyKeyless(ctx, r.puller, ref, keyless, f.opts.Signatures)
	})
}

// trustRoot is the trust root of v: its Secret's trusted_root.json (parsed
// once per content), or the public one.
func (f *Fetcher) trustRoot(ctx context.Context, namespace string, v *convoyv1alpha1.OCIVerification, inputs Inputs, where string) (*cosign.TrustRoot, error) {
	if v.TrustedRootSecretRef == nil {
		if f.opts.PublicTrustRoot == nil {
			return nil, failure.New(ReasonSignatureUnverified, nil, "%s: verify names no trustedRootSecretRef, and this server does not use the public Sigstore trust root "+
				"(--sigstore-public-trust-root is off): no trust root to verify keyless signatures with", where)
		}
		tr, err := f.opts.PublicTrustRoot.TrustRoot(ctx)
		if err != nil {
			return nil, failure.New(ReasonSourceUnreachable, err, "%s: the public Sigstore trust root could not be fetched", where)
		}
		return tr, nil
	}
	secretWhere := "verify.trustedRootSecretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: v.TrustedRootSecretRef.Name}.Describe()
	s, err := f.readVerifySecret(ctx, namespace, v.TrustedRootSecretRef.Name, inputs, where, secretWhere)
	if err != nil {
		return nil, err
	}
	data, ok := s.Data[TrustRootKey]
	if !ok {
		return nil, failure.New(ReasonSignatureUnverified, nil, "%s: %s has no key %s: no trust root to verify with", where, secretWhere, TrustRootKey)
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:])
	if tr, ok := f.trustRoots.Get(id); ok {
		return tr, nil
	}
	tr, err := cosign.ParseTrustRoot(data)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", where, secretWhere, err.Error())
	}
	f.trustRoots.Put(id, tr)
	return tr, nil
}

// readVerifySecret reads a Secret verify names, as the Release.
func (f *Fetcher) readVerifySecret(ctx context.Context, namespace, name string, inputs Inputs, where, secretWhere string) (*corev1.Secret, error) {
	s, err := inputs.Secret(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		// No key or root, no verification: the artifact's reason, not the
		// credentials'.
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s not found: nothing to verify with", where, secretWhere)
	case apierrors.IsForbidden(err):
		return nil, failure.New(ReasonInputForbidden, err, "%s may not be read", secretWhere)
	case err != nil:
		return nil, Unavailable(err, "%s could not be read", secretWhere)
	}
	return s, nil
}

// verdict runs check, or takes its verdict from the cache: kept by
// namespace, origin, digest, provider and the digest of the policy (keys,
// or trust root and identities), never across namespaces or trust
// material; a signature for ResolveMaxAge, a SignatureUnverified for
// UnverifiedMaxAge unless ctx is a refresh's (WithFreshAfter) read before
// it. A transient failure (the registry's) is not kept.
func (f *Fetcher) verdict(ctx context.Context, namespace string, r *ociResolution, ref name.Digest, policy, where string, check func(context.Context) (*cosign.Signer, error)) (*subresourcesv1alpha1.SourceSignature, error) {
	key := "verify\x00" + namespace + "\x00" + r.repo.String() + "\x00" + ref.DigestStr() + "\x00" + ProviderCosign + "\x00" + policy
	since := f.freshAfter(ctx)
	sig, ok := f.getSignature(key)
	var refused error
	if !ok {
		refused = f.getUnverified(key, since)
	}
	if f.countSignatureLookup(ok || refused != nil) {
		if refused != nil {
			return nil, cosignFailure(where, refused)
		}
		return sig, nil
	}
	got, err := f.shared(ctx, namespace, key+freshFlight(since), func(ctx context.Context) (any, error) {
		if sig, ok := f.getSignature(key); ok {
			return sig, nil
		}
		if refused := f.getUnverified(key, since); refused != nil {
			return nil, cosignFailure(where, refused)
		}
		signer, err := check(ctx)
		if err != nil {
			ferr := cosignFailure(where, err)
			if failure.ReasonOf(ferr) == ReasonSignatureUnverified {
				// The verdict, not its message: the next caller names its
				// own source.
				f.putUnverified(key, err)
			}
			return nil, ferr
		}
		sig := &subresourcesv1alpha1.SourceSignature{
			Provider: ProviderCosign, Key: signer.Key, Fingerprint: signer.Fingerprint,
			Issuer: signer.Issuer, Subject: signer.Subject, Layout: signer.Layout,
		}
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

// countSignatureLookup counts a lookup of the verdict cache: a hit is a
// verdict kept, a signature or a SignatureUnverified.
func (f *Fetcher) countSignatureLookup(hit bool) bool {
	return f.countLookup(agecache.CacheSignature, hit)
}
