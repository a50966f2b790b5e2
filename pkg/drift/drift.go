// Package drift checks a Release for drift: it gets the Release's Access
// (its identity and target cluster, pkg/cluster), picks the desired render
// (pkg/desired) and compares it with the live objects (pkg/compare). GET
// /diff and the drift loop both call Checker.Check, so they always agree.
package drift

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Reasons of the InSync condition: compare.ReasonInSync (True),
// compare.ReasonDrifted (False) and ReasonUndetermined (Unknown), whose
// message begins with the reason of the result (RenderFailed,
// ClusterUnreachable, Forbidden, ...).
const (
	// ReasonUndetermined: the check could not complete.
	ReasonUndetermined = "Undetermined"
	// ReasonRenderFailed: the source or the render failed; a reason of an
	// Undetermined result found before the compare.
	ReasonRenderFailed = "RenderFailed"
)

// Report is the outcome of a check: the compare result, and the render it
// compared when one was picked.
type Report struct {
	*compare.Result
	// Desired is nil when no render could be picked (RenderFailed).
	Desired *desired.Result
	// client is the one the compare used, for ExtraObjects.
	client compare.Client
}

// Condition is the InSync condition of the report: True InSync, False
// Drifted or Unknown Undetermined, with a message that names the render it
// compared and the first drifted or failing object. The writer sets its
// observedGeneration and lastTransitionTime.
func (r *Report) Condition() metav1.Condition {
	cond := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Message: r.Message}
	switch r.Result.Result {
	case subresourcesv1alpha1.DiffInSync:
		cond.Status, cond.Reason = metav1.ConditionTrue, compare.ReasonInSync
	case subresourcesv1alpha1.DiffDrifted:
		cond.Status, cond.Reason = metav1.ConditionFalse, compare.ReasonDrifted
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonUndetermined
		cond.Message = fmt.Sprintf("%s: %s", r.Reason, r.Message)
	}
	if r.Desired != nil {
		cond.Message = fmt.Sprintf("render %s (%s): %s", r.Desired.Ref, r.Desired.Source, cond.Message)
	}
	cond.Message = truncate.String(cond.Message, truncate.Condition)
	return cond
}

// Checker checks Releases for drift.
type Checker struct {
	targets cluster.Targets
	render  *render.Engine
	engine  *compare.Engine
	// renders and lists, when set, reuse fresh renders whose inputs did not
	// change and learn live resourceVersions from shared LISTs.
	renders *desired.RenderCache
	lists   bool
}

// NewChecker returns a Checker that gets each Release's Access from targets,
// renders with renderEngine and compares with engine. Every check reads
// each object (and reuses a compare only when engine has a cache and the
// object's resourceVersion did not change).
func NewChecker(targets cluster.Targets, renderEngine *render.Engine, engine *compare.Engine) *Checker {
	return &Checker{targets: targets, render: renderEngine, engine: engine}
}

// WithSnapshots returns a copy of c whose checks also reuse renders from
// renders and learn the resourceVersions of live objects from the Targets'
// shared metadata-only LISTs (cluster.Snapshots), so that an unchanged
// object costs no request: what the drift loop uses. A change shows at the
// first check whose LIST is newer than it.
func (c *Checker) WithSnapshots(renders *desired.RenderCache) *Checker {
	d := *c
	d.renders, d.lists = renders, true
	return &d
}

// Check compares the desired render of release (or the stored render ref,
// when ref is set) with the live objects. Every failure is a Report with an
// Undetermined result that names it, except a stored render asked for with
// ref that is not stored: that is an error wrapping render.ErrNotStored.
//
// Everything is done as the Release's identity: its inputs and render store
// are read, and its objects read and dry-run, with the clients of its Access.
// The Access is had once per check: a fresh render scopes namespaces with
// the target's REST mapper, and the compare runs on the same target.
//
// A panic of the check ends it as Undetermined with reason InternalError
// (the stack is logged); it never reaches the caller.
func (c *Checker) Check(ctx context.Context, release *convoyv1alpha1.Release, ref string) (report *Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			report, err = &Report{Result: compare.Undetermined(compare.ReasonInternalError, compare.Panicked(ctx, r))}, nil
		}
	}()
	access, err := c.targets.ForRelease(ctx, release)
	if err != nil {
		var clusterErr *cluster.Error
		if errors.As(err, &clusterErr) {
			return &Report{Result: compare.Undetermined(clusterErr.Reason, clusterErr.Message)}, nil
		}
		return &Report{Result: compare.Undetermined(cluster.ReasonClusterNotFound, err.Error())}, nil
	}
	want, err := desired.For(c.render, c.renders, access).Resolve(ctx, release, ref)
	if err != nil {
		if ref != "" && errors.Is(err, render.ErrNotStored) {
			return nil, err
		}
		return &Report{Result: resolveFailure(access, err)}, nil
	}
	client := &compare.DynamicClient{Dynamic: access.Target.Dynamic, Mapper: access.Target.Mapper,
		Identity: access.Who(), ClusterName: access.Target.Name}
	if c.lists {
		client.Snapshots = access.Target.Snapshots
	}
	return &Report{Result: c.engine.Compare(ctx, client, want.Objects), Desired: want, client: client}, nil
}

// resolveFailure is the Undetermined result of a desired render that could
// not be had.
func resolveFailure(access *cluster.Access, err error) *compare.Result {
	if apierrors.IsForbidden(err) {
		// An input or a stored render the identity may not read.
		return compare.Undetermined(compare.ReasonForbidden, fmt.Sprintf("%s may not read an input of the release: %v", access.Identity, err))
	}
	var notAllowed *cluster.AddressNotAllowedError
	if errors.As(err, &notAllowed) {
		// The render's discovery is the first connection to the cluster.
		return compare.Undetermined(cluster.ReasonAddressNotAllowed, notAllowed.Error())
	}
	var renderErr *render.Error
	if !errors.As(err, &renderErr) {
		return compare.Undetermined(ReasonRenderFailed, err.Error())
	}
	if render.IsLimit(renderErr.Reason) {
		// A limit of the render has a reason of its own.
		return compare.Undetermined(renderErr.Reason, renderErr.Message)
	}
	// Discovery of the target cluster for the render's namespaces is the
	// first request to the cluster.
	if what := cluster.NetworkFailure(renderErr); renderErr.Reason == render.ReasonInputUnavailable && what != "" {
		return compare.Undetermined(compare.ReasonClusterUnreachable,
			fmt.Sprintf("the cluster is unreachable (%s): %s", what, renderErr.Message))
	}
	return compare.Undetermined(ReasonRenderFailed, fmt.Sprintf("%s: %s", renderErr.Reason, renderErr.Message))
}
