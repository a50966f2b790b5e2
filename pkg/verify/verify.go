// Package verify is the signature policy of Releases' sources: whether a
// Release asks for signatures, what verifies under its policy, the
// verdicts kept (a signature for Options.MaxAge, a SignatureUnverified for
// UnverifiedMaxAge, never across namespaces or trust material) and the
// reason SignatureUnverified. For an OCI artifact
// (spec.source.ociRepository.verify) pkg/cosign verifies the signatures,
// by the public keys of a Secret, or keyless by a trust root and the
// identities it expects (Verify). For a Git source (spec.source.git.verify)
// pkg/gitverify verifies the commit's and the annotated tag's signatures
// (OpenPGP or SSH) by the public keys of a Secret, under Flux's modes
// HEAD, Tag and TagAndHEAD (VerifyGit). A Helm repository chart
// (spec.source.helmRepository.verify) is verified by its provenance file
// (helm package --sign's .prov) with Helm's provenance package and the
// OpenPGP keys of a Secret (VerifyHelm). pkg/source resolves the digest or
// the commit, fetches what is verified, and reads through its Fetcher,
// which a Verifier is given (Fetcher): its Secrets, its slots, its
// reasons.
package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
)

// ReasonSignatureUnverified is an artifact whose signature a Release asks
// for and that has none that verifies: nothing of it is rendered.
var ReasonSignatureUnverified = failure.Declare(failure.Reason{
	Name: "SignatureUnverified", Class: failure.ClassForbidden, Shows: failure.InSyncAndResponse, Refusal: true,
	Means: "the source's verify asks for a signature and what the source resolved to has none that verifies: an OCI digest (ociRepository.verify: " +
		"by a key of the Secret, or keyless by the trust root and an expected identity), a Git commit or annotated tag (git.verify, by its mode: " +
		"unsigned, an unknown key, a bad signature, a tag not on the commit), a Helm repository chart (helmRepository.verify: no .prov, an unknown key, " +
		"a .prov of another digest); or a stored render names no revision that verifies now: nothing of it was rendered, compared or shown; the message " +
		"names the signature and the step that failed (the cases: docs/users/verification.md)",
	Action: "sign it (cosign sign; git commit -S or git tag -s; helm package --sign) or trust its signer (its public key in the Secret, its issuer " +
		"and subject in matchOIDCIdentity); for a stored render, pin one stored from a signed revision, or remove the pin",
})

// TrustRootKey is the key of a trustedRootSecretRef Secret.
const TrustRootKey = "trusted_root.json"

// ProviderCosign is the one provider of signatures.
const ProviderCosign = "cosign"

// UnverifiedMaxAge is how long a verdict of SignatureUnverified is kept (at
// most Options.MaxAge), by the key of the verified ones: a loop of GET
// /diff of a Release whose registry serves no signature that verifies (or
// a signature manifest of 30 MiB) reads it once, not at each request.
// Short, so that a digest signed since verifies soon; a refresh asks again.
const UnverifiedMaxAge = 30 * time.Second

// ErrUnknownProvider is the error of a verify whose provider is not
// cosign (the CRD allows none other); the fetcher gives it its reason.
var ErrUnknownProvider = errors.New("the provider of the signatures is not cosign")

// Asks reports whether release asks for signatures of its source
// (spec.source.ociRepository.verify, spec.source.git.verify,
// spec.source.helmRepository.verify): then neither a fresh render nor a
// stored one reaches a compare unless what it was made from verifies.
func Asks(release *convoyv1alpha1.Release) bool {
	src := release.Spec.Source
	return (src.OCIRepository != nil && src.OCIRepository.Verify != nil) ||
		(src.Git != nil && src.Git.Verify != nil) ||
		(src.HelmRepository != nil && src.HelmRepository.Verify != nil)
}

// Options configure a Verifier.
type Options struct {
	// Signatures bound the signatures read to verify an artifact
	// (cosign.Limits; zero: its defaults).
	Signatures cosign.Limits
	// GitLimits bound a Git signature block and a key Secret, checked
	// before they are parsed (gitverify.Limits; zero: its defaults).
	GitLimits gitverify.Limits
	// MaxAge is how long a verdict is kept (the sources' ResolveMaxAge; a
	// SignatureUnverified at most UnverifiedMaxAge); zero: none is kept.
	MaxAge time.Duration
	// Clock is the caches' clock; nil: the real one.
	Clock clock.PassiveClock
}

// Verifier verifies the artifacts of Releases under their policy and keeps
// the verdicts. It is safe for concurrent use; one Fetcher holds one.
type Verifier struct {
	opts Options
	// signatures are the verdicts of verifications by namespace, origin,
	// digest (a Git commit and tag object), provider and the digest of the
	// policy (verdict, verifyGit); unverified are the errors of cosign or
	// gitverify of those that were SignatureUnverified, by the same keys,
	// for UnverifiedMaxAge. nil: no verdict kept.
	signatures *agecache.Cache[string, signed]
	unverified *agecache.Cache[string, error]
	// trustRoots are the trust roots of trustedRootSecretRef Secrets, by
	// the SHA-256 of their trusted_root.json: parsed once.
	trustRoots *agecache.Cache[string, *cosign.TrustRoot]
}

// New returns a Verifier.
func New(opts Options) *Verifier {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	v := &Verifier{opts: opts, trustRoots: agecache.New[string, *cosign.TrustRoot](64, time.Hour, opts.Clock, nil)}
	if opts.MaxAge > 0 {
		const entries = 4096
		v.signatures = agecache.New[string, signed](entries, opts.MaxAge, opts.Clock, nil)
		v.unverified = agecache.New[string, error](entries, min(UnverifiedMaxAge, opts.MaxAge), opts.Clock, nil)
	}
	return v
}

// Fetcher is what a Verifier reads through: the fetcher of the Release's
// source (pkg/source), as the Release, in the fetch slots of its
// namespace; each method's failures carry the fetcher's reasons.
type Fetcher interface {
	// Secret reads the Secret name of the Release's namespace, for what
	// ("verify.secretRef Secret NS/NAME"); a missing one is the API's
	// NotFound error, as it is.
	Secret(ctx context.Context, name, what string) (*corev1.Secret, error)
	// PublicTrustRoot is the public Sigstore trust root, for where; nil
	// and no error when the server does not use it.
	PublicTrustRoot(ctx context.Context, where string) (*cosign.TrustRoot, error)
	// Shared runs fn once for the callers that ask for key at the same
	// time, in a fetch slot of the Release's namespace.
	Shared(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error)
	// RegistryFailure is err, a failure of the registry, reading what.
	RegistryFailure(what string, err error) error
}

// Artifact is what a Verifier verifies: a digest the fetcher resolved.
type Artifact struct {
	// Namespace is the Release's: verdicts are never shared across
	// namespaces.
	Namespace string
	// Ref is the digest, of its repository; Puller the registry client of
	// the Release's credentials.
	Ref    name.Digest
	Puller *remote.Puller
	// Where names the artifact in messages.
	Where string
	// Since is the time of a refresh (source.WithFreshAfter): a
	// SignatureUnverified read before it is not used. Zero: none.
	Since time.Time
}

// Verify verifies a with the policy of spec (the Release's verify), reading
// through f, and returns the signature it verified with: the verdict kept
// by namespace, origin, digest, provider and the digest of the policy
// (keys, or trust root and identities), never across namespaces or trust
// material. It counts the outcome (convoy_source_verifications_total).
func (v *Verifier) Verify(ctx context.Context, f Fetcher, a Artifact, spec *convoyv1alpha1.OCIVerification) (*subresourcesv1alpha1.SourceSignature, error) {
	sig, err := v.verify(ctx, f, a, spec)
	countVerification(spec.Provider, err)
	return sig, err
}

func (v *Verifier) verify(ctx context.Context, f Fetcher, a Artifact, spec *convoyv1alpha1.OCIVerification) (*subresourcesv1alpha1.SourceSignature, error) {
	if spec.Provider != ProviderCosign {
		return nil, ErrUnknownProvider
	}
	if len(spec.MatchOIDCIdentity) > 0 {
		return v.verifyKeyless(ctx, f, a, spec)
	}
	if spec.SecretRef == nil {
		return nil, failure.New(ReasonSignatureUnverified, nil, "%s: verify names neither a secretRef of public keys nor matchOIDCIdentity", a.Where)
	}
	secretWhere := "verify.secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: a.Namespace, Name: spec.SecretRef.Name}.Describe()
	s, err := readSecret(ctx, f, spec.SecretRef.Name, a.Where, secretWhere)
	if err != nil {
		return nil, err
	}
	keys, err := cosign.ParseKeys(s.Data)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", a.Where, secretWhere, err.Error())
	}
	return v.verdict(ctx, f, a, "keys\x00"+keys.Digest(), func(ctx context.Context) (*cosign.Signer, error) {
		return cosign.Verify(ctx, a.Puller, a.Ref, keys, v.opts.Signatures)
	})
}

// verifyKeyless verifies with spec's keyless policy: the trust root of
// trustedRootSecretRef, or the public one where the server allows it.
func (v *Verifier) verifyKeyless(ctx context.Context, f Fetcher, a Artifact, spec *convoyv1alpha1.OCIVerification) (*subresourcesv1alpha1.SourceSignature, error) {
	trust, err := v.trustRoot(ctx, f, a, spec)
	if err != nil {
		return nil, err
	}
	ids := make([]cosign.Identity, 0, len(spec.MatchOIDCIdentity))
	for _, m := range spec.MatchOIDCIdentity {
		ids = append(ids, cosign.Identity{Issuer: m.Issuer, Subject: m.Subject})
	}
	keyless, err := cosign.NewKeyless(trust, ids)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: verify.matchOIDCIdentity: %s", a.Where, err.Error())
	}
	return v.verdict(ctx, f, a, "keyless\x00"+keyless.Digest(), func(ctx context.Context) (*cosign.Signer, error) {
		return cosign.VerifyKeyless(ctx, a.Puller, a.Ref, keyless, v.opts.Signatures)
	})
}

// trustRoot is the trust root of spec: its Secret's trusted_root.json
// (parsed once per content), or the public one.
func (v *Verifier) trustRoot(ctx context.Context, f Fetcher, a Artifact, spec *convoyv1alpha1.OCIVerification) (*cosign.TrustRoot, error) {
	if spec.TrustedRootSecretRef == nil {
		tr, err := f.PublicTrustRoot(ctx, a.Where)
		switch {
		case err != nil:
			return nil, err
		case tr == nil:
			return nil, failure.New(ReasonSignatureUnverified, nil, "%s: verify names no trustedRootSecretRef, and this server does not use the public Sigstore trust root "+
				"(--sigstore-public-trust-root is off): no trust root to verify keyless signatures with", a.Where)
		}
		return tr, nil
	}
	secretWhere := "verify.trustedRootSecretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: a.Namespace, Name: spec.TrustedRootSecretRef.Name}.Describe()
	s, err := readSecret(ctx, f, spec.TrustedRootSecretRef.Name, a.Where, secretWhere)
	if err != nil {
		return nil, err
	}
	data, ok := s.Data[TrustRootKey]
	if !ok {
		return nil, failure.New(ReasonSignatureUnverified, nil, "%s: %s has no key %s: no trust root to verify with", a.Where, secretWhere, TrustRootKey)
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:])
	if tr, ok := v.trustRoots.Get(id); ok {
		return tr, nil
	}
	tr, err := cosign.ParseTrustRoot(data)
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", a.Where, secretWhere, err.Error())
	}
	v.trustRoots.Put(id, tr)
	return tr, nil
}

// readSecret reads a Secret verify names, as the Release, through f.
func readSecret(ctx context.Context, f Fetcher, name, where, secretWhere string) (*corev1.Secret, error) {
	s, err := f.Secret(ctx, name, secretWhere)
	if apierrors.IsNotFound(err) {
		// No key or root, no verification: the artifact's reason, not the
		// credentials'.
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s not found: nothing to verify with", where, secretWhere)
	}
	return s, err
}
