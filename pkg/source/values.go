package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// valuesField names spec.valuesSource in the messages of its failures.
const valuesField = "spec.valuesSource"

// FetchValues fetches the values source of release (spec.valuesSource):
// a Git commit, a bundle of files in an OCI registry or a ConfigMap,
// through exactly the paths of Fetch (the Release's identity and
// credentials, the address policy, the slots, limits, caches and shared
// ref listings, the verification its verify asks for). Its Files are the
// values files, under Path. A revision of ctx (revision.With) names the
// Release's own source, so it is not applied here. Every failure names
// spec.valuesSource and keeps its reason; park.ErrParked is returned as
// it is. A Helm chart is refused: a values source holds files.
func (f *Fetcher) FetchValues(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs) (*Source, error) {
	vr, err := valuesRelease(release)
	if err != nil {
		return nil, err
	}
	out, err := f.Fetch(revision.Without(ctx), vr, inputs)
	if err != nil {
		return nil, valuesFailure(err)
	}
	if out.Chart != nil {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: %s is a packaged Helm chart, not files of values", valuesField, out.Where)
	}
	return out, nil
}

// ResolveValues is Resolve for the values source of release: the digest
// or "git:COMMIT" it resolves to now, "" for a ConfigMap, sharing Fetch's
// caches. Its failures name spec.valuesSource.
func (f *Fetcher) ResolveValues(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs) (string, error) {
	vr, err := valuesRelease(release)
	if err != nil {
		return "", err
	}
	digest, err := f.Resolve(revision.Without(ctx), vr, inputs)
	if err != nil {
		return "", valuesFailure(err)
	}
	return digest, nil
}

// VerifyValuesRevision is VerifyRevision for the values source of release:
// resolved, the revision of spec.valuesSource a stored render names
// (render.Store.Get's ValuesResolved), must be one of the values source as
// it is now that verifies now under its verify, through the paths of
// VerifyRevision (valuesRelease, as FetchValues). A stored render that
// names none is SignatureUnverified. It returns a copy of resolved with
// the signatures it verified with, as VerifyRevision does. A Release
// without a values source, or whose values source asks for no signature,
// gives nil, nil. Every
// failure names spec.valuesSource and keeps its reason.
func (f *Fetcher) VerifyValuesRevision(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error) {
	if release == nil || release.Spec.ValuesSource == nil {
		return nil, nil
	}
	vr, err := valuesRelease(release)
	if err != nil {
		return nil, err
	}
	if !verify.Asks(vr) {
		return nil, nil
	}
	if resolved == nil {
		return nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "%s asks for signatures, and the stored render names no revision of it "+
			"(the annotation %s of its Secret): the values it was made with cannot be verified", valuesField, convoyv1alpha1.AnnotationResolvedValuesSource))
	}
	verified, err := f.VerifyRevision(ctx, vr, inputs, resolved)
	if err != nil {
		return nil, valuesFailure(err)
	}
	return verified, nil
}

// valuesRelease is release with its values source as its spec.source: the
// same namespace, identity and name, so that every path of Fetch serves it.
func valuesRelease(release *convoyv1alpha1.Release) (*convoyv1alpha1.Release, error) {
	if release == nil || release.Spec.ValuesSource == nil {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s is not set", valuesField)
	}
	vs := release.Spec.ValuesSource
	src := convoyv1alpha1.ReleaseSource{ConfigMap: vs.ConfigMap, OCIRepository: vs.OCIRepository, Git: vs.Git}
	switch kinds := setKinds(src); len(kinds) {
	case 0:
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s sets no source kind (configMap, ociRepository or git)", valuesField)
	case 1:
	default:
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s sets more than one source kind: %s", valuesField, strings.Join(kinds, ", "))
	}
	vr := *release
	vr.Spec.Source = src
	vr.Spec.ValuesSource = nil
	return &vr, nil
}

// valuesFailure is err, a failure of the values source, with the message
// of each failure.Error of its chain prefixed by spec.valuesSource and its
// reason kept: whichever of them a caller shows (the outermost, or the
// cause: pkg/drift) says it is the values source that failed. park's
// ErrParked is returned as it is.
func valuesFailure(err error) error {
	if errors.Is(err, park.ErrParked) {
		return err
	}
	fe, ok := err.(*failure.Error)
	if !ok {
		return fmt.Errorf("%s: %w", valuesField, err)
	}
	return prefixed(fe)
}

// prefixed is a copy of fe and of the failure.Errors it wraps directly,
// their messages prefixed by spec.valuesSource; fe itself, which a cache
// may share, is not changed. Where the chain goes on through another
// error that holds a failure (an address refused under a url.Error), a
// prefixed copy of that innermost failure is put above it: pkg/drift
// shows the outermost failure of the cause's reason, which is then that
// copy.
func prefixed(fe *failure.Error) *failure.Error {
	inner := fe.Err
	if ie, ok := inner.(*failure.Error); ok {
		inner = prefixed(ie)
	} else if cause, ok := failure.Cause(inner); ok {
		inner = &failure.Error{Reason: cause.Reason, Message: valuesField + ": " + cause.Message, Err: inner}
	}
	return &failure.Error{Reason: fe.Reason, Message: valuesField + ": " + fe.Message, Err: inner}
}
