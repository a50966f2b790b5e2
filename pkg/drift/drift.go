// Package drift checks a Release for drift: it gets the Release's Access
// (its identity and target cluster, pkg/cluster), picks the desired render
// (pkg/desired) and compares it with the live objects (pkg/compare). The
// REST storage (GET /diff and /preview) and the drift loop talk to it only,
// so they always agree; its classifier gives every failure the reason of
// the InSync condition.
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
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Report is the outcome of a check: the compare result, the render it
// compared when one was picked, and the objects the next sync would prune
// when they were asked for. Its objects carry their contested fields
// (ObjectDiff.Contested) from the Release's status.selfHeal.
type Report struct {
	*compare.Result
	// Desired is nil when no render could be picked (RenderFailed).
	Desired *desired.Result
	// ExtraObjects are the inventory entries the render no longer declares
	// that still exist (Options.ExtraObjects).
	ExtraObjects []subresourcesv1alpha1.ExtraObject
}

// Condition is the InSync condition of the report: True InSync, False
// Drifted or Unknown Undetermined, with a message that names the render it
// compared and the first drifted or failing object. The writer sets its
// observedGeneration and lastTransitionTime.
func (r *Report) Condition() metav1.Condition {
	cond := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Message: r.Message}
	switch r.Result.Verdict {
	case subresourcesv1alpha1.DiffInSync:
		cond.Status, cond.Reason = metav1.ConditionTrue, compare.ReasonInSync
	case subresourcesv1alpha1.DiffDrifted:
		cond.Status, cond.Reason = metav1.ConditionFalse, compare.ReasonDrifted
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, compare.ReasonUndetermined
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
	targets     cluster.Targets
	render      *render.Engine
	engine      *compare.Engine
	inventories convoyclient.ReleaseInventoriesGetter
	// renders and lists, when set, reuse fresh renders whose inputs did not
	// change and learn live resourceVersions from shared LISTs.
	renders *desired.RenderCache
	lists   bool
}

// NewChecker returns a Checker that gets each Release's Access from targets,
// renders with renderEngine, compares with engine and reads the
// ReleaseInventories (for Options.ExtraObjects) with inventories. Every
// check reads each object (and reuses a compare only when engine has a cache
// and the object's resourceVersion did not change).
func NewChecker(targets cluster.Targets, renderEngine *render.Engine, engine *compare.Engine, inventories convoyclient.ReleaseInventoriesGetter) *Checker {
	return &Checker{targets: targets, render: renderEngine, engine: engine, inventories: inventories}
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

// Options are what a check is asked for beyond the drift of the desired
// render.
type Options struct {
	// Render, when set, compares the stored render with that renderRef
	// instead of the desired render (GET /diff?render=REF).
	Render string
	// ExtraObjects also lists the objects the next sync would prune (see
	// Report.ExtraObjects): what /diff shows, and the loop does not need.
	ExtraObjects bool
}

// Check compares the desired render of release (or the stored render
// opts.Render) with the live objects. Every failure of the check is a
// Report with an Undetermined result and the reason of the InSync condition
// (see classifyBeforeCompare), except a stored render asked for that is not stored: that is
// a *failure.Error of reason ReasonRenderNotStored. The ReleaseInventory
// that could not be read for opts.ExtraObjects is an error too, and so is a
// check whose source parked (park.ErrParked, with a park.Spot in ctx: the
// loop's pass runs again when the request ends).
//
// Everything is done as the Release's identity: its inputs and render store
// are read, and its objects read and dry-run, with the clients of its Access.
// The Access is had once per check: a fresh render scopes namespaces with
// the target's REST mapper, and the compare runs on the same target.
//
// A panic of the check ends it as Undetermined with reason InternalError
// (the stack is logged); it never reaches the caller.
func (c *Checker) Check(ctx context.Context, release *convoyv1alpha1.Release, opts Options) (report *Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			f := failure.Recovered(ctx, r)
			report, err = &Report{Result: compare.Undetermined(f.Reason, f.Message)}, nil
		}
	}()
	access, want, f := c.desired(ctx, release, opts.Render)
	if f != nil {
		if f.Reason == ReasonRenderNotStored || errors.Is(f, park.ErrParked) {
			return nil, f
		}
		return &Report{Result: compare.Undetermined(f.Reason, f.Message)}, nil
	}
	reader := access.Reader(c.lists)
	report = &Report{Result: c.engine.Compare(ctx, reader, want.Objects), Desired: want}
	report.Objects = withContested(report.Objects, release.Status.SelfHeal)
	if opts.ExtraObjects {
		inv, err := c.inventories.ReleaseInventories(release.Namespace).Get(ctx, release.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err): // not applied yet: nothing to prune
		case err != nil:
			return nil, fmt.Errorf("reading inventory %s/%s: %w", release.Namespace, release.Name, err)
		default:
			report.ExtraObjects = extraObjects(ctx, reader, want.Objects, inv.Spec.Entries)
		}
	}
	return report, nil
}

// Desired returns the desired render of release (or the stored render ref,
// when ref is set), read or rendered as the Release's identity: the render
// /diff and the drift loop compare, for GET /preview. Its error is a
// *failure.Error with the reason the InSync condition would have (see
// classifyBeforeCompare), or ReasonRenderNotStored.
func (c *Checker) Desired(ctx context.Context, release *convoyv1alpha1.Release, ref string) (result *desired.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, failure.Recovered(ctx, r)
		}
	}()
	_, want, f := c.desired(ctx, release, ref)
	if f != nil {
		return nil, f
	}
	return want, nil
}

// desired gets the Access of release and its desired render; a failure of
// either is classified.
func (c *Checker) desired(ctx context.Context, release *convoyv1alpha1.Release, ref string) (*cluster.Access, *desired.Result, *failure.Error) {
	access, err := c.targets.ForRelease(ctx, release)
	if err != nil {
		return nil, nil, classifyBeforeCompare(err, stepAccess, cluster.Identity{})
	}
	want, err := desired.For(c.render, c.renders, access).Resolve(ctx, release, ref)
	if err != nil {
		return access, nil, classifyBeforeCompare(err, stepRender, access.Identity)
	}
	return access, want, nil
}
