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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/contest"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
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
// render. /diff sets the first two; a pass of the drift loop the last
// three, which the packages below read from the check's context (put there
// by Check only).
type Options struct {
	// Render, when set, compares the stored render with that renderRef
	// instead of the desired render (GET /diff?render=REF).
	Render string
	// Revision, when set, compares a render of the Release's own source at
	// that revision instead (GET /diff?revision=REV, desired.Ask): not with
	// Render, never the loops'. A revision the source does not have is an
	// error (IsRevisionNotFound), not a report.
	Revision string
	// ExtraObjects also lists the objects the next sync would prune (see
	// Report.ExtraObjects): what /diff shows, and the loop does not need.
	ExtraObjects bool

	// ListedAfter, when set, learns the resourceVersions of live objects
	// and inputs only from LISTs sent at or after it
	// (cluster.WithListedAfter): the pass follows an event after which the
	// cluster may hold something new.
	ListedAfter time.Time
	// ResolvedAfter, when set, resolves the source with what was read at or
	// after it, whatever --source-resolve-max-age (source.WithFreshAfter):
	// a refresh requested then.
	ResolvedAfter time.Time
	// Spot, when set, is where a wait for a registry or a repository parks
	// (park.WithSpot): the check then returns park.ErrParked, and the
	// Spot's wake starts the next pass.
	Spot *park.Spot
}

// context is ctx with the options the packages below read from it.
func (o Options) context(ctx context.Context) context.Context {
	if !o.ListedAfter.IsZero() {
		ctx = cluster.WithListedAfter(ctx, o.ListedAfter)
	}
	if !o.ResolvedAfter.IsZero() {
		ctx = source.WithFreshAfter(ctx, o.ResolvedAfter)
	}
	if o.Spot != nil {
		ctx = park.WithSpot(ctx, o.Spot)
	}
	return ctx
}

// Check compares the desired render of release (or the stored render
// opts.Render) with the live objects, as the Release's identity, with one
// Access for the render and the compare. Every failure is a Report with an
// Undetermined result and the reason of the InSync condition
// (classifyBeforeCompare), or an error: a stored render asked for that is not
// stored (ReasonRenderNotStored), an inventory unreadable for
// opts.ExtraObjects, a source that parked (park.ErrParked, with opts.Spot).
// A panic ends it as Undetermined, InternalError (the stack logged).
func (c *Checker) Check(ctx context.Context, release *convoyv1alpha1.Release, opts Options) (report *Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			f := failure.Recovered(ctx, r)
			report, err = &Report{Result: compare.Undetermined(f.Reason, f.Message)}, nil
		}
	}()
	ctx = opts.context(ctx)
	access, want, f := c.desired(ctx, release, desired.Ask{Render: opts.Render, Revision: opts.Revision})
	if f != nil {
		if f.Reason == ReasonRenderNotStored || errors.Is(f, park.ErrParked) || (opts.Revision != "" && IsRevisionNotFound(f)) {
			return nil, f
		}
		return &Report{Result: compare.Undetermined(f.Reason, f.Message)}, nil
	}
	reader := access.Reader(c.lists)
	report = &Report{Result: c.engine.Compare(ctx, reader, want.Objects), Desired: want}
	report.Objects = contest.Mark(report.Objects, release.Status.SelfHeal)
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

// Desired returns the desired render of release (or what ask asks for: a
// stored render, a revision), read or rendered as the Release's identity: the render
// /diff and the drift loop compare, for GET /preview. Its error is a
// *failure.Error with the reason the InSync condition would have (see
// classifyBeforeCompare), or ReasonRenderNotStored.
func (c *Checker) Desired(ctx context.Context, release *convoyv1alpha1.Release, ask desired.Ask) (result *desired.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, failure.Recovered(ctx, r)
		}
	}()
	_, want, f := c.desired(ctx, release, ask)
	if f != nil {
		return nil, f
	}
	return want, nil
}

// desired gets the Access of release and its desired render; a failure of
// either is classified.
func (c *Checker) desired(ctx context.Context, release *convoyv1alpha1.Release, ask desired.Ask) (*cluster.Access, *desired.Result, *failure.Error) {
	access, err := c.targets.ForRelease(ctx, release)
	if err != nil {
		return nil, nil, classifyBeforeCompare(err, stepAccess, cluster.Identity{})
	}
	want, err := desired.For(c.render, c.renders, access).Resolve(ctx, release, ask)
	if err != nil {
		return access, nil, classifyBeforeCompare(err, stepRender, access.Identity)
	}
	return access, want, nil
}
