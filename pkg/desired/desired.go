// Package desired picks the desired render of a Release, in the order
// docs/users/drift.md gives: the pinned render if it is stored, else the
// last healthy render of a RolledBack Release if it is stored, else a fresh
// render. /preview,
// /diff and the drift loop share it, so they always look at the same render.
package desired

import (
	"context"
	"errors"
	"fmt"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// Renderer makes a fresh render of a Release.
type Renderer interface {
	Render(ctx context.Context, release *convoyv1alpha1.Release) (*render.Render, error)
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

// Resolver picks the desired render.
type Resolver struct {
	renderer Renderer
	store    Store
}

// NewResolver returns a Resolver.
func NewResolver(renderer Renderer, store Store) *Resolver {
	return &Resolver{renderer: renderer, store: store}
}

// Resolve returns the desired render of release. With ref set it returns that
// stored render (source Stored) and an error wrapping render.ErrNotStored when
// it is not stored. A fresh render that fails returns the *render.Error.
// Reading the store fails only on a real error: a pinned or last healthy
// render that is not stored falls through to the next choice.
func (r *Resolver) Resolve(ctx context.Context, release *convoyv1alpha1.Release, ref string) (*Result, error) {
	if ref != "" {
		stored, err := r.store.Get(ctx, release.Namespace, release.Name, ref)
		if err != nil {
			return nil, err
		}
		return &Result{Source: subresourcesv1alpha1.RenderSourceStored, Render: stored}, nil
	}
	if pin := release.Spec.Pin; pin != nil && pin.RenderRef != "" {
		if stored, err := r.stored(ctx, release, pin.RenderRef); err != nil || stored != nil {
			return resultOf(subresourcesv1alpha1.RenderSourcePinned, stored, err)
		}
	}
	if rollout, healthy := release.Status.Rollout, release.Status.LastHealthy; rollout != nil &&
		rollout.Phase == convoyv1alpha1.RolloutRolledBack && healthy != nil && healthy.RenderRef != "" {
		if stored, err := r.stored(ctx, release, healthy.RenderRef); err != nil || stored != nil {
			return resultOf(subresourcesv1alpha1.RenderSourceLastHealthy, stored, err)
		}
	}
	fresh, err := r.renderer.Render(ctx, release)
	if err != nil {
		return nil, err
	}
	return &Result{Source: subresourcesv1alpha1.RenderSourceFresh, Render: fresh}, nil
}

// stored returns the stored render ref, nil when it is not stored.
func (r *Resolver) stored(ctx context.Context, release *convoyv1alpha1.Release, ref string) (*render.Render, error) {
	stored, err := r.store.Get(ctx, release.Namespace, release.Name, ref)
	if errors.Is(err, render.ErrNotStored) {
		return nil, nil
	}
	return stored, err
}

func resultOf(source subresourcesv1alpha1.RenderSource, stored *render.Render, err error) (*Result, error) {
	if err != nil {
		return nil, fmt.Errorf("reading the %s render: %w", source, err)
	}
	return &Result{Source: source, Render: stored}, nil
}
