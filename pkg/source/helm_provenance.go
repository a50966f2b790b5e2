package source

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// verifyHelm verifies chart, the archive of r that helmChart got, by its
// provenance file under the policy of src.Verify (pkg/verify, reading
// through this Fetcher as the Release), and returns the signature it
// verified with. The provenance file is read only when no verdict is kept
// (provenance): it is not kept itself, so a chart signed again (a key
// rotated) is read again once the verdict is old.
func (f *Fetcher) verifyHelm(ctx context.Context, namespace string, src *convoyv1alpha1.HelmRepositorySource, inputs Inputs, r *helmResolution, chart []byte, where string) (*subresourcesv1alpha1.SourceSignature, error) {
	since := f.freshAfter(ctx)
	host := verifyHost{releaseSecrets: releaseSecrets{inputs: inputs, namespace: namespace}, f: f, since: since}
	sig, err := f.verifier.VerifyHelm(ctx, host, verify.HelmChart{
		Namespace: namespace, URL: r.chartURL, Digest: r.resolved.Digest, Archive: chart, Where: where, Since: since,
		Provenance: func(ctx context.Context) ([]byte, error) { return f.provenance(ctx, r) },
	}, src.Verify)
	if errors.Is(err, verify.ErrUnknownHelmProvider) {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "verify.provider %q is not helm", src.Verify.Provider)
	}
	return sig, err
}

// provenance reads the provenance file of r's chart, its URL + ".prov" as
// helm does, as the chart is read (request: the credentials only to the
// repository's own origin, the address policy), within
// verify.MaxProvenanceBytes. A chart without one (404), or one past the
// limit, is SignatureUnverified: the repository holds no provenance that
// can verify it. It runs in the verification's shared request, in its slot.
func (f *Fetcher) provenance(ctx context.Context, r *helmResolution) ([]byte, error) {
	u := r.chartURL + ".prov"
	data, err := f.request(ctx, r, http.MethodGet, u, verify.MaxProvenanceBytes, "the provenance file")
	// No cause: the repository's reason under it would be what the
	// condition shows (failure.Cause), and it is the verdict's.
	switch failure.ReasonOf(err) {
	case sourcefailure.ReasonArtifactNotFound:
		return nil, failure.New(verify.ReasonSignatureUnverified, nil, "the repository has no provenance file %s (404): the chart is not signed (helm package --sign writes it beside the chart)", u)
	case sourcefailure.ReasonArtifactTooLarge:
		return nil, failure.New(verify.ReasonSignatureUnverified, nil, "the provenance file %s is larger than the limit of %d bytes", u, verify.MaxProvenanceBytes)
	}
	return data, err
}

// verifyRevisionHelm is VerifyRevision for a Helm repository source: the
// stored render names the chart {URL, chart, version, digest} it was made
// from; that version's entry of the index now must list the same digest,
// and its archive (kept, or downloaded again) must verify under the
// Release's verify now.
func (f *Fetcher) verifyRevisionHelm(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.SourceSignature, error) {
	src := release.Spec.Source.HelmRepository
	switch {
	case resolved == nil:
		return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "%s asks for signatures, and the stored render names no revision of its source "+
			"(the annotation %s of its Secret): it cannot be verified", src.URL, convoyv1alpha1.AnnotationResolvedSource))
	case resolved.Kind != KindHelmRepository || resolved.URL != src.URL || resolved.Chart != src.Chart:
		return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "the stored render was made from %s %s chart %q, not from the Release's source %s chart %s: "+
			"it cannot be verified under the Release's verify", resolved.Kind, resolved.URL, resolved.Chart, src.URL, src.Chart))
	case resolved.Version == "" || !isSHA256(resolved.Digest):
		return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "the stored render names %s chart %s version %q digest %q, not a version and a sha256 digest: "+
			"it cannot be verified", src.URL, src.Chart, resolved.Version, resolved.Digest))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.opts.Timeout, errFetchTimeout)
	defer cancel()
	byVersion := *src
	byVersion.Version = "=" + resolved.Version
	r, err := f.resolveHelm(ctx, release.Namespace, &byVersion, inputs)
	if err != nil {
		return nil, countRefusal(f.timedOut(ctx, err))
	}
	if r.resolved.Digest != resolved.Digest {
		return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "the stored render was made from %s chart %s version %s %s, and the index now lists %s for that version: "+
			"the chart it was made from cannot be verified", src.URL, src.Chart, resolved.Version, resolved.Digest, r.resolved.Digest))
	}
	where := src.URL + " chart " + src.Chart + " " + resolved.Version + " (" + resolved.Digest + ", a stored render's source)"
	chart, err := f.helmChart(ctx, release.Namespace, r, where)
	if err == nil {
		var sig *subresourcesv1alpha1.SourceSignature
		if sig, err = f.verifyHelm(ctx, release.Namespace, src, inputs, r, chart, where); err == nil {
			return sig, nil
		}
	}
	return nil, countRefusal(f.timedOut(ctx, err))
}

// isSHA256 reports whether digest is sha256: and 64 lower-case hex
// digits, as resolveHelm writes it.
func isSHA256(digest string) bool {
	h, ok := strings.CutPrefix(digest, "sha256:")
	_, err := hex.DecodeString(h)
	return ok && err == nil && len(h) == 64 && h == strings.ToLower(h)
}
