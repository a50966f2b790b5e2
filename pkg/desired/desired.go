// Package desired picks the desired render of a Release, in the order
// docs/users/drift.md gives: the pinned render if it is stored, else the
// last healthy render of a RolledBack Release if it is stored, else a fresh
// render. /preview, /diff and the drift loop share it, so they always look
// at the same render. Where the Release asks for signatures, a stored
// render is used only when the revision its Secret names verifies now, as a
// fresh render's source must: an unverified artifact reaches no compare on
// any path.
package desired

import (
	"context"
	"errors"
	"fmt"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
)

// Renderer makes a fresh render of a Release.
type Renderer interface {
	Render(ctx context.Context, release *convoyv1alpha1.Release) (*render.Render, error)
}

// Verifier verifies that a revision of a Release's source, which a stored
// render names, verifies now under the Release's policy (VerifyRevision),
// and that the revision of its values source it names verifies under the
// values source's verify (VerifyValuesRevision); each returns a copy of the
// revision with the signatures it verified with (Verified, and VerifiedTag
// for a Git tag mode), or nil, nil when what it verifies asks for no
// signature (*render.Renderer).
type Verifier interface {
	VerifyRevision(ctx context.Context, release *convoyv1alpha1.Release, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error)
	VerifyValuesRevision(ctx context.Context, release *convoyv1alpha1.Release, resolved *subresourcesv1alpha1.ResolvedSource) (*subresourcesv1alpha1.ResolvedSource, error)
}

// Store reads stored renders; a render that is not stored gives an error
// wrapping render.ErrNotStored.
type Store interface {
	Get(ctx context.Context, namespace, release, ref string) (*render.Render, error)
}

// Result is the desired render and where it came from.
type Result struct {
	Source subresourcesv1alpha1.RenderSource
	*render.Render
}

// Ask is what a caller asks of Resolve; the zero Ask is the desired
// render.
type Ask struct {
	// Render is the renderRef of a stored render (?render=REF).
	Render string
	// Revision is a revision of the Release's own source to render
	// (?revision=REV, revision.With): a fresh render of it, pins and
	// rollbacks aside, for a look only (never the loops').
	Revision string
}

// Resolver picks the desired render.
type Resolver struct {
	renderer Renderer
	store    Store
	verifier Verifier
}

// NewResolver returns a Resolver whose stored renders pass verifier.
func NewResolver(renderer Renderer, store Store, verifier Verifier) *Resolver {
	return &Resolver{renderer: renderer, store: store, verifier: verifier}
}

// Resolve returns the desired render of release, or what ask asks for. With
// ask.Revision set it renders the source at that revision (source
// Revision). With ask.Render set it returns that stored render (source
// Stored) and an error wrapping render.ErrNotStored when it is not stored.
// A fresh render that fails returns the *render.Error. Reading the store
// fails only on a real error: a pinned or last healthy render that is not
// stored falls through to the next choice. A stored render the Verifier
// refuses is that refusal (SignatureUnverified): it does not fall through
// to a fresh render, which is not what the Release asked for.
func (r *Resolver) Resolve(ctx context.Context, release *convoyv1alpha1.Release, ask Ask) (*Result, error) {
	if ask.Revision != "" {
		if ask.Render != "" {
			return nil, errors.New("a stored render and a revision cannot both be asked for")
		}
		at, err := r.renderer.Render(revision.With(ctx, ask.Revision), release)
		if err != nil {
			return nil, err
		}
		return &Result{Source: subresourcesv1alpha1.RenderSourceRevision, Render: at}, nil
	}
	if ref := ask.Render; ref != "" {
		stored, err := r.store.Get(ctx, release.Namespace, release.Name, ref)
		if err == nil {
			err = r.verify(ctx, release, subresourcesv1alpha1.RenderSourceStored, stored)
		}
		if err != nil {
			return nil, err
		}
		return &Result{Source: subresourcesv1alpha1.RenderSourceStored, Render: stored}, nil
	}
	if pin := release.Spec.Pin; pin != nil && pin.RenderRef != "" {
		if stored, err := r.stored(ctx, release, subresourcesv1alpha1.RenderSourcePinned, pin.RenderRef); err != nil || stored != nil {
			return resultOf(subresourcesv1alpha1.RenderSourcePinned, stored, err)
		}
	}
	if rollout, healthy := release.Status.Rollout, release.Status.LastHealthy; rollout != nil &&
		rollout.Phase == convoyv1alpha1.RolloutRolledBack && healthy != nil && healthy.RenderRef != "" {
		if stored, err := r.stored(ctx, release, subresourcesv1alpha1.RenderSourceLastHealthy, healthy.RenderRef); err != nil || stored != nil {
			return resultOf(subresourcesv1alpha1.RenderSourceLastHealthy, stored, err)
		}
	}
	fresh, err := r.renderer.Render(ctx, release)
	if err != nil {
		return nil, err
	}
	return &Result{Source: subresourcesv1alpha1.RenderSourceFresh, Render: fresh}, nil
}

// stored returns the stored render ref, verified, nil when it is not
// stored.
func (r *Resolver) stored(ctx context.Context, release *convoyv1alpha1.Release, source subresourcesv1alpha1.RenderSource, ref string) (*render.Render, error) {
	stored, err := r.store.Get(ctx, release.Namespace, release.Name, ref)
	if errors.Is(err, render.ErrNotStored) {
		return nil, nil
	}
	if err == nil {
		err = r.verify(ctx, release, source, stored)
	}
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// sourceWords names the stored renders in messages.
var sourceWords = map[subresourcesv1alpha1.RenderSource]string{
	subresourcesv1alpha1.RenderSourcePinned:      "pinned",
	subresourcesv1alpha1.RenderSourceLastHealthy: "last healthy",
	subresourcesv1alpha1.RenderSourceStored:      "stored",
}

// verify checks stored, the render source names, with the Verifier: the
// revision of its source, then that of its values source. It puts the
// copies of stored.Resolved and stored.ValuesResolved that carry the
// signatures they were verified with in their place. A refusal names the render.
func (r *Resolver) verify(ctx context.Context, release *convoyv1alpha1.Release, source subresourcesv1alpha1.RenderSource, stored *render.Render) error {
	verified, err := r.verifier.VerifyRevision(ctx, release, stored.Resolved)
	if err != nil {
		return r.refusal(source, stored, err)
	}
	valuesVerified, err := r.verifier.VerifyValuesRevision(ctx, release, stored.ValuesResolved)
	if err != nil {
		return r.refusal(source, stored, err)
	}
	if verified != nil {
		stored.Resolved = verified
	}
	if valuesVerified != nil {
		stored.ValuesResolved = valuesVerified
	}
	return nil
}

// refusal is err, a failure to verify stored, naming the render.
func (r *Resolver) refusal(source subresourcesv1alpha1.RenderSource, stored *render.Render, err error) error {
	if f, ok := failure.As(err); ok {
		return failure.Quiet(f.Reason, f, "the %s render %s: %s", sourceWords[source], stored.Ref, f.Message)
	}
	return err
}

func resultOf(source subresourcesv1alpha1.RenderSource, stored *render.Render, err error) (*Result, error) {
	if err != nil {
		return nil, fmt.Errorf("reading the %s render: %w", source, err)
	}
	return &Result{Source: source, Render: stored}, nil
}
