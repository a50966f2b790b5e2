// Package drift checks a Release for drift: it picks the desired render
// (pkg/desired), the target cluster (pkg/cluster) and compares them
// (pkg/compare). GET /diff and the drift loop both call Checker.Check, so
// they always agree.
package drift

import (
	"context"
	"errors"
	"fmt"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// Reasons of an Undetermined result found before the compare.
const (
	ReasonRenderFailed = "RenderFailed"
)

// Report is the outcome of a check: the compare result, and the render it
// compared when one was picked.
type Report struct {
	*compare.Result
	// Desired is nil when no render could be picked (RenderFailed).
	Desired *desired.Result
}

// Targets gives the clients of a Release's target cluster.
type Targets interface {
	ForRelease(ctx context.Context, release *convoyv1alpha1.Release) (*cluster.Target, error)
}

// Checker checks Releases for drift.
type Checker struct {
	inputs  render.Inputs
	store   desired.Store
	targets Targets
	engine  *compare.Engine
}

// NewChecker returns a Checker that renders from inputs, reads stored renders
// from store, and compares on the clusters of targets with engine.
func NewChecker(inputs render.Inputs, store desired.Store, targets Targets, engine *compare.Engine) *Checker {
	return &Checker{inputs: inputs, store: store, targets: targets, engine: engine}
}

// Check compares the desired render of release (or the stored render ref,
// when ref is set) with the live objects. Every failure is a Report with an
// Undetermined result that names it, except a stored render asked for with
// ref that is not stored: that is an error wrapping render.ErrNotStored.
//
// The target cluster is had once per check: a fresh render scopes namespaces
// with its REST mapper, and the compare runs on it.
func (c *Checker) Check(ctx context.Context, release *convoyv1alpha1.Release, ref string) (*Report, error) {
	target, err := c.targets.ForRelease(ctx, release)
	if err != nil {
		var clusterErr *cluster.Error
		if errors.As(err, &clusterErr) {
			return &Report{Result: compare.Undetermined(clusterErr.Reason, clusterErr.Message)}, nil
		}
		return &Report{Result: compare.Undetermined(cluster.ReasonClusterNotFound, err.Error())}, nil
	}
	resolver := desired.NewResolver(desired.TargetRenderer{Inputs: c.inputs, Targets: fixedTarget{target}}, c.store)
	want, err := resolver.Resolve(ctx, release, ref)
	if err != nil {
		if ref != "" && errors.Is(err, render.ErrNotStored) {
			return nil, err
		}
		var renderErr *render.Error
		if errors.As(err, &renderErr) {
			// Discovery of the target cluster for the render's namespaces
			// is the first request to the cluster.
			if what := compare.NetworkFailure(renderErr); renderErr.Reason == render.ReasonInputUnavailable && what != "" {
				return &Report{Result: compare.Undetermined(compare.ReasonClusterUnreachable,
					fmt.Sprintf("the cluster is unreachable (%s): %s", what, renderErr.Message))}, nil
			}
			return &Report{Result: compare.Undetermined(ReasonRenderFailed,
				fmt.Sprintf("%s: %s", renderErr.Reason, renderErr.Message))}, nil
		}
		return &Report{Result: compare.Undetermined(ReasonRenderFailed, err.Error())}, nil
	}
	result := c.engine.Compare(ctx, &compare.DynamicClient{Dynamic: target.Dynamic, Mapper: target.Mapper}, want.Objects)
	return &Report{Result: result, Desired: want}, nil
}

// fixedTarget gives the one target a check already has.
type fixedTarget struct{ target *cluster.Target }

func (f fixedTarget) ForRelease(context.Context, *convoyv1alpha1.Release) (*cluster.Target, error) {
	return f.target, nil
}
