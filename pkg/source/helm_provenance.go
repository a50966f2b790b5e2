package source

import (
	"context"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// verifyRevisionHelm is VerifyRevision for a Helm repository source. Not
// built yet: nothing of a stored render of a Helm repository source that
// asks for signatures is compared.
func (f *Fetcher) verifyRevisionHelm(_ context.Context, release *convoyv1alpha1.Release, _ Inputs, _ *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.SourceSignature, error) {
	return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "%s: the verification of Helm provenance is not built yet", release.Spec.Source.HelmRepository.URL))
}
