package desired

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

const (
	pinnedRef  = "1111111111111111"
	healthyRef = "2222222222222222"
	freshRef   = "3333333333333333"
)

type fakeStore struct {
	renders map[string]*render.Render
	err     error
}

func (s fakeStore) Get(_ context.Context, _, _, ref string) (*render.Render, error) {
	if s.err != nil {
		return nil, s.err
	}
	if r, ok := s.renders[ref]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("ref %s: %w", ref, render.ErrNotStored)
}

type fakeRenderer struct{ err error }

func (f fakeRenderer) Render(context.Context, *convoyv1alpha1.Release) (*render.Render, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &render.Render{Ref: freshRef}, nil
}

// fakeVerifier verifies the revision sha256:good for the Releases that ask
// for signatures, with a signature and a tag's (as a Git TagAndHEAD).
type fakeVerifier struct{}

var errUnverified = failure.New("SignatureUnverified", nil, "no signature")

func (fakeVerifier) VerifyRevision(_ context.Context, release *convoyv1alpha1.Release, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error) {
	switch {
	case release.Spec.Source.OCIRepository == nil || release.Spec.Source.OCIRepository.Verify == nil:
		return nil, nil
	case resolved == nil || resolved.Digest != "sha256:good":
		return nil, errUnverified
	}
	verified := *resolved
	verified.Verified = &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Key: "ci.pub"}
	verified.VerifiedTag = &subresourcesv1alpha1.SourceSignature{Provider: "git", Key: "ci.pub", Layout: "tag"}
	return &verified, nil
}

// VerifyValuesRevision verifies the values revision sha256:values-good for
// the Releases whose OCI values source asks for signatures.
func (fakeVerifier) VerifyValuesRevision(_ context.Context, release *convoyv1alpha1.Release, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error) {
	switch vs := release.Spec.ValuesSource; {
	case vs == nil || vs.OCIRepository == nil || vs.OCIRepository.Verify == nil:
		return nil, nil
	case resolved == nil || resolved.Digest != "sha256:values-good":
		return nil, errUnverified
	}
	verified := *resolved
	verified.Verified = &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Key: "values.pub"}
	return &verified, nil
}

func TestResolve(t *testing.T) {
	both := map[string]*render.Render{pinnedRef: {Ref: pinnedRef}, healthyRef: {Ref: healthyRef}}
	pinned := func(r *convoyv1alpha1.Release) { r.Spec.Pin = &convoyv1alpha1.Pin{RenderRef: pinnedRef} }
	rolledBack := func(r *convoyv1alpha1.Release) {
		r.Status.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutRolledBack}
		r.Status.LastHealthy = &convoyv1alpha1.RenderRecord{RenderRef: healthyRef}
	}
	verified := func(r *convoyv1alpha1.Release) {
		r.Spec.Source.OCIRepository = &convoyv1alpha1.OCIRepositorySource{URL: "oci://r.example/web", Tag: "v1",
			Verify: &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "keys"}}}
	}
	good := &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r.example/web", Digest: "sha256:good"}
	bad := &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r.example/web", Digest: "sha256:bad"}
	signed := map[string]*render.Render{pinnedRef: {Ref: pinnedRef, Resolved: good}, healthyRef: {Ref: healthyRef, Resolved: good}}
	planted := map[string]*render.Render{pinnedRef: {Ref: pinnedRef}, healthyRef: {Ref: healthyRef, Resolved: bad}}
	valuesVerified := func(r *convoyv1alpha1.Release) {
		r.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://r.example/values", Tag: "v1",
			Verify: &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "keys"}}}}
	}
	valuesGood := &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r.example/values", Digest: "sha256:values-good"}
	withValues := map[string]*render.Render{pinnedRef: {Ref: pinnedRef, Resolved: good, ValuesResolved: valuesGood}}
	withoutValues := map[string]*render.Render{pinnedRef: {Ref: pinnedRef, Resolved: good}}
	renderFailed := &failure.Error{Reason: "SourceNotFound", Message: "source ConfigMap x/y not found"}
	storeDown := errors.New("connection refused")

	cases := []struct {
		name       string
		mutate     []func(*convoyv1alpha1.Release)
		stored     map[string]*render.Render
		storeErr   error
		renderErr  error
		ref        string
		wantSource subresourcesv1alpha1.RenderSource
		wantRef    string
		wantErr    error
		wantSigned bool
		// wantValuesSigned: the values revision carries its signature.
		wantValuesSigned bool
	}{
		{name: "fresh", stored: both, wantSource: subresourcesv1alpha1.RenderSourceFresh, wantRef: freshRef},
		{name: "pinned and stored", mutate: []func(*convoyv1alpha1.Release){pinned}, stored: both,
			wantSource: subresourcesv1alpha1.RenderSourcePinned, wantRef: pinnedRef},
		{name: "pinned wins over rolled back", mutate: []func(*convoyv1alpha1.Release){pinned, rolledBack}, stored: both,
			wantSource: subresourcesv1alpha1.RenderSourcePinned, wantRef: pinnedRef},
		{name: "pinned but missing, rolled back", mutate: []func(*convoyv1alpha1.Release){pinned, rolledBack},
			stored: map[string]*render.Render{healthyRef: {Ref: healthyRef}}, wantSource: subresourcesv1alpha1.RenderSourceLastHealthy, wantRef: healthyRef},
		{name: "pinned but missing", mutate: []func(*convoyv1alpha1.Release){pinned}, wantSource: subresourcesv1alpha1.RenderSourceFresh, wantRef: freshRef},
		{name: "rolled back and stored", mutate: []func(*convoyv1alpha1.Release){rolledBack}, stored: both,
			wantSource: subresourcesv1alpha1.RenderSourceLastHealthy, wantRef: healthyRef},
		{name: "rolled back but missing", mutate: []func(*convoyv1alpha1.Release){rolledBack}, wantSource: subresourcesv1alpha1.RenderSourceFresh, wantRef: freshRef},
		{name: "last healthy without rollback", mutate: []func(*convoyv1alpha1.Release){func(r *convoyv1alpha1.Release) {
			r.Status.LastHealthy = &convoyv1alpha1.RenderRecord{RenderRef: healthyRef}
			r.Status.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutComplete}
		}}, stored: both, wantSource: subresourcesv1alpha1.RenderSourceFresh, wantRef: freshRef},
		{name: "asked for a stored render", ref: healthyRef, mutate: []func(*convoyv1alpha1.Release){pinned}, stored: both,
			wantSource: subresourcesv1alpha1.RenderSourceStored, wantRef: healthyRef},
		{name: "asked for a missing render", ref: "4444444444444444", stored: both, wantErr: render.ErrNotStored},
		{name: "render fails", renderErr: renderFailed, wantErr: renderFailed},
		{name: "store fails on a pinned release", mutate: []func(*convoyv1alpha1.Release){pinned}, storeErr: storeDown, wantErr: storeDown},
		// A Release that asks for signatures: a stored render only with a
		// revision that verifies; a refusal does not fall through.
		{name: "verified: pinned, its revision signed", mutate: []func(*convoyv1alpha1.Release){verified, pinned}, stored: signed,
			wantSource: subresourcesv1alpha1.RenderSourcePinned, wantRef: pinnedRef, wantSigned: true},
		{name: "verified: pinned, naming no revision", mutate: []func(*convoyv1alpha1.Release){verified, pinned}, stored: planted, wantErr: errUnverified},
		{name: "verified: rolled back, its revision unsigned", mutate: []func(*convoyv1alpha1.Release){verified, rolledBack}, stored: planted, wantErr: errUnverified},
		{name: "verified: asked for a stored render, unsigned", mutate: []func(*convoyv1alpha1.Release){verified}, ref: healthyRef, stored: planted, wantErr: errUnverified},
		{name: "verified: asked for a stored render, signed", mutate: []func(*convoyv1alpha1.Release){verified}, ref: healthyRef, stored: signed,
			wantSource: subresourcesv1alpha1.RenderSourceStored, wantRef: healthyRef, wantSigned: true},
		{name: "verified: fresh", mutate: []func(*convoyv1alpha1.Release){verified}, stored: planted, wantSource: subresourcesv1alpha1.RenderSourceFresh, wantRef: freshRef},
		// A values source that asks for signatures: the stored render's
		// values revision verifies too, or the render is refused.
		{name: "values verified: pinned, both revisions signed", mutate: []func(*convoyv1alpha1.Release){verified, valuesVerified, pinned}, stored: withValues,
			wantSource: subresourcesv1alpha1.RenderSourcePinned, wantRef: pinnedRef, wantSigned: true, wantValuesSigned: true},
		{name: "values verified: pinned, naming no values revision", mutate: []func(*convoyv1alpha1.Release){verified, valuesVerified, pinned}, stored: withoutValues,
			wantErr: errUnverified},
		{name: "values verified, source not: pinned", mutate: []func(*convoyv1alpha1.Release){valuesVerified, pinned}, stored: withValues,
			wantSource: subresourcesv1alpha1.RenderSourcePinned, wantRef: pinnedRef, wantValuesSigned: true},
		{name: "unverified Release: a render naming no revision is used", mutate: []func(*convoyv1alpha1.Release){pinned}, stored: planted,
			wantSource: subresourcesv1alpha1.RenderSourcePinned, wantRef: pinnedRef},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := &convoyv1alpha1.Release{}
			release.Namespace, release.Name = "shop", "web"
			for _, m := range tc.mutate {
				m(release)
			}
			r := NewResolver(fakeRenderer{err: tc.renderErr}, fakeStore{renders: tc.stored, err: tc.storeErr}, fakeVerifier{})
			got, err := r.Resolve(context.Background(), release, Ask{Render: tc.ref})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				if f, ok := failure.As(err); ok && tc.wantErr == errUnverified {
					assert.Regexp(t, `^the (pinned|last healthy|stored) render [0-9]{16}: no signature$`, f.Message, "names the render")
					assert.Equal(t, "SignatureUnverified", f.Reason)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantSource, got.Source)
			assert.Equal(t, tc.wantRef, got.Ref)
			if tc.wantSigned {
				require.NotNil(t, got.Resolved)
				require.NotNil(t, got.Resolved.Verified, "the signature it was verified with")
				require.NotNil(t, got.Resolved.VerifiedTag, "a tag's signature too, as the Verifier returned it")
				assert.Equal(t, "tag", got.Resolved.VerifiedTag.Layout)
				assert.Nil(t, good.Verified, "the revision the store read is not changed")
			}
			if tc.wantValuesSigned {
				require.NotNil(t, got.ValuesResolved)
				require.NotNil(t, got.ValuesResolved.Verified, "the values signature it was verified with")
				assert.Equal(t, "values.pub", got.ValuesResolved.Verified.Key)
				assert.Nil(t, valuesGood.Verified, "the values revision the store read is not changed")
			}
		})
	}
}
