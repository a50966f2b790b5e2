package source

import (
	"context"
	"errors"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/component-base/metrics"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// PublicTrustRoot gives the public Sigstore instance's trust root (the
// one outbound connection that no tenant chooses: sigstoreroot).
type PublicTrustRoot interface {
	TrustRoot(ctx context.Context) (*cosign.TrustRoot, error)
}

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

// verifyOCI verifies the signatures of the artifact ref, which resolveOCI
// resolved (r: its repository, client and credentials), under the policy
// of src.Verify (pkg/verify, reading through this Fetcher as the Release),
// and returns the signature it verified with. The caller fetches the same
// digest: nothing is resolved again in between.
func (f *Fetcher) verifyOCI(ctx context.Context, namespace string, src *convoyv1alpha1.OCIRepositorySource, inputs Inputs, r *ociResolution, ref name.Digest, where string) (*subresourcesv1alpha1.SourceSignature, error) {
	since := f.freshAfter(ctx)
	host := verifyHost{releaseSecrets: releaseSecrets{inputs: inputs, namespace: namespace}, f: f, since: since}
	sig, err := f.verifier.Verify(ctx, host, verify.Artifact{Namespace: namespace, Ref: ref, Puller: r.puller, Where: where, Since: since}, src.Verify)
	if errors.Is(err, verify.ErrUnknownProvider) {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "verify.provider %q is not cosign", src.Verify.Provider)
	}
	return sig, err
}

// VerifyRevision verifies that resolved, the revision of its source a
// stored render of release names (render.Store.Get), is a revision of the
// Release's source as it is now that verifies now under its policy, as a
// fresh render's must: the same repository, and a digest signed as verify
// asks (the verdict cache serves it as it serves fresh renders). A stored
// render that names no revision, or one of another source, is
// SignatureUnverified: nothing of it is compared. A Release that asks for
// no signature gives nil, nil. What it returns is a copy of resolved
// with the signatures it verified with: Verified, and VerifiedTag for a Git
// source in a tag mode (TagAndHEAD). The revision is what the render's Secret
// says: that it is what the render was made from rests on who may write
// render Secrets (artifacts/admission/protect-render-store.yaml).
func (f *Fetcher) VerifyRevision(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error) {
	var sig, tagSig *subresourcesv1alpha1.SourceSignature
	var err error
	switch src := release.Spec.Source; {
	case !verify.Asks(release):
		return nil, nil
	case src.Git != nil:
		sig, tagSig, err = f.verifyRevisionGit(ctx, release, inputs, resolved)
	case src.HelmRepository != nil:
		sig, err = f.verifyRevisionHelm(ctx, release, inputs, resolved)
	default:
		sig, err = f.verifyRevisionOCI(ctx, release, inputs, resolved)
	}
	if err != nil || resolved == nil {
		return nil, err
	}
	verified := *resolved
	verified.Verified, verified.VerifiedTag = sig, tagSig
	return &verified, nil
}

// verifyRevisionOCI is VerifyRevision for an OCI source.
func (f *Fetcher) verifyRevisionOCI(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.SourceSignature, error) {
	src := release.Spec.Source.OCIRepository
	if err := refuseOtherRevision(KindOCIRepository, src.URL, resolved); err != nil {
		return nil, err
	}
	digest, err := v1.NewHash(resolved.Digest)
	if err != nil || digest.Algorithm != "sha256" {
		return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "the stored render names %s@%q, not a sha256 digest: it cannot be verified", src.URL, resolved.Digest))
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

// refuseOtherRevision refuses (SignatureUnverified, counted) resolved, a
// stored render's revision, when it is none, or one of another kind or
// URL than the Release's source (kind, url): nothing else verifies under
// the Release's verify. nil: it is the source's.
func refuseOtherRevision(kind, url string, resolved *subresourcesv1alpha1.ResolvedSource) error {
	switch {
	case resolved == nil:
		return countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "%s asks for signatures, and the stored render names no revision of its source "+
			"(the annotation %s of its Secret): it cannot be verified", url, convoyv1alpha1.AnnotationResolvedSource))
	case resolved.Kind != kind || resolved.URL != url:
		return countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "the stored render was made from %s %s, not from the Release's source %s: "+
			"it cannot be verified under the Release's verify", resolved.Kind, resolved.URL, url))
	}
	return nil
}

// verifyHost is the Fetcher as a verify.Fetcher: it reads as the Release
// (releaseSecrets) and shares requests in the fetch slots of its namespace.
type verifyHost struct {
	releaseSecrets
	f     *Fetcher
	since time.Time
}

func (h verifyHost) PublicTrustRoot(ctx context.Context, where string) (*cosign.TrustRoot, error) {
	if h.f.opts.PublicTrustRoot == nil {
		return nil, nil
	}
	tr, err := h.f.opts.PublicTrustRoot.TrustRoot(ctx)
	if err != nil {
		return nil, failure.New(sourcefailure.ReasonSourceUnreachable, err, "%s: the public Sigstore trust root could not be fetched", where)
	}
	return tr, nil
}

func (h verifyHost) Shared(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	return h.f.shared(ctx, h.namespace, key+freshFlight(h.since), fn)
}

func (h verifyHost) RegistryFailure(what string, err error) error { return registryFailure(what, err) }
