// Package standin is a development stand-in for convoy's controller, which
// is not in this repository: `make run` (hack/local-up) runs its Controller
// so that the example Release is applied, healed and assessed with no
// command from the user, and the e2e tests use its Applier to make Releases
// look applied. It is not part of convoy-apiserver nor of its image.
//
// It does what DESIGN.md asks of the controller, plainly: it renders a
// Release afresh, keeps the render in the render store, applies it with
// server-side apply (field manager convoy, as the Release's identity) wave by
// wave, lists what it applied in the ReleaseInventory, and writes
// lastAttempted, lastApplied, lastHealthy and rollout. It does not prune,
// retry with backoff, or run Helm hooks.
package standin

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// Annotations of rendered objects that the stand-in reads (convoy's
// controller defines its own; these are for local use).
const (
	// AnnotationWave puts an object in a sync wave (an integer, default 0):
	// a wave is applied once every object of the waves before it is Healthy.
	AnnotationWave = "convoy.kumodo.io/wave"
	// AnnotationHook makes an object a lifecycle hook workload, PreSync
	// (applied before the first wave) or PostSync (after the last).
	AnnotationHook = "convoy.kumodo.io/hook"
)

// Clients are the clients a Release is applied with.
type Clients struct {
	// Home reads the Release's inputs.
	Home kubernetes.Interface
	// Dynamic and Mapper apply its objects to the target cluster.
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// ClientsFunc gives the Clients of a Release.
type ClientsFunc func(ctx context.Context, release *convoyv1alpha1.Release) (*Clients, error)

// AsIdentity gives the clients of the Release's Access: its ServiceAccount on
// the local cluster, or its Cluster's kubeconfig, as convoy's controller
// acts (docs/users/identity.md).
func AsIdentity(targets cluster.Targets) ClientsFunc {
	return func(ctx context.Context, release *convoyv1alpha1.Release) (*Clients, error) {
		access, err := targets.ForRelease(ctx, release)
		if err != nil {
			return nil, err
		}
		return &Clients{Home: access.Home, Dynamic: access.Target.Dynamic, Mapper: access.Target.Mapper}, nil
	}
}

// Applier does the controller's steps, one at a time.
type Applier struct {
	Convoy  convoyclient.Interface // Releases and ReleaseInventories
	Clients ClientsFunc
	Clock   clock.PassiveClock
	// Engine renders, fetches sources and stores renders; required (the
	// caller builds it, with the address policy its sources need).
	Engine *render.Engine
	// Renders writes the render store with the controller's own identity,
	// never a Release's: the admission policy
	// artifacts/admission/protect-render-store.yaml lets only the
	// controller write render Secrets, so that no tenant can plant one.
	Renders kubernetes.Interface
}

// Render renders the Release afresh with its clients.
func (a *Applier) Render(ctx context.Context, release *convoyv1alpha1.Release) (*render.Render, error) {
	c, err := a.Clients(ctx, release)
	if err != nil {
		return nil, err
	}
	return a.Engine.Renderer(source.ClientInputs{Client: c.Home}, render.MapperScoper{Mapper: c.Mapper}).Render(ctx, release)
}

// Store keeps r in the render store of the Release, as the controller
// (Renders).
func (a *Applier) Store(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render) error {
	return a.Engine.Store(a.Renders).Put(ctx, release, r)
}

// ApplyObjects server-side applies objs with the field manager convoy and
// force, as the Release's clients.
func (a *Applier) ApplyObjects(ctx context.Context, release *convoyv1alpha1.Release, objs []*unstructured.Unstructured) error {
	c, err := a.Clients(ctx, release)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		_, err = c.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// Entry is the inventory entry of obj, applied with the render ref.
func Entry(obj *unstructured.Unstructured, ref string) convoyv1alpha1.InventoryEntry {
	gvk := obj.GroupVersionKind()
	e := convoyv1alpha1.InventoryEntry{
		ObjectKey: convoyv1alpha1.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Version:   gvk.Version,
		Wave:      WaveOf(obj),
		RenderRef: ref,
	}
	if phase, ok := HookOf(obj); ok {
		e.Hook = &convoyv1alpha1.Hook{Phase: phase, RunAfter: convoyv1alpha1.HookRunAfterApplied}
	}
	return e
}

// WaveOf is the sync wave of obj (AnnotationWave; 0 when absent or not an
// integer).
func WaveOf(obj *unstructured.Unstructured) int32 {
	w, err := strconv.ParseInt(obj.GetAnnotations()[AnnotationWave], 10, 32)
	if err != nil {
		return 0
	}
	return int32(w)
}

// HookOf is the hook phase of obj (AnnotationHook), if it is a hook.
func HookOf(obj *unstructured.Unstructured) (convoyv1alpha1.HookPhase, bool) {
	switch p := convoyv1alpha1.HookPhase(obj.GetAnnotations()[AnnotationHook]); p {
	case convoyv1alpha1.HookPreSync, convoyv1alpha1.HookPostSync:
		return p, true
	}
	return "", false
}

// SetInventory applies the spec of the Release's ReleaseInventory (owned by
// the Release) with entries, which replace the ones the controller listed.
func (a *Applier) SetInventory(ctx context.Context, release *convoyv1alpha1.Release, entries []convoyv1alpha1.InventoryEntry) error {
	spec := convoyapply.ReleaseInventorySpec()
	for _, e := range entries {
		entry := convoyapply.InventoryEntry().
			WithGroup(e.Group).WithVersion(e.Version).WithKind(e.Kind).
			WithNamespace(e.Namespace).WithName(e.Name).WithRenderRef(e.RenderRef)
		if e.Wave != 0 {
			entry.WithWave(e.Wave)
		}
		if e.Hook != nil {
			entry.WithHook(convoyapply.Hook().WithPhase(e.Hook.Phase).WithRunAfter(e.Hook.RunAfter))
		}
		spec.WithEntries(entry)
	}
	inventory := convoyapply.ReleaseInventory(release.Name, release.Namespace).
		WithOwnerReferences(metav1apply.OwnerReference().
			WithAPIVersion(convoyv1alpha1.SchemeGroupVersion.String()).WithKind("Release").
			WithName(release.Name).WithUID(release.UID).WithController(true)).
		WithSpec(spec)
	_, err := a.Convoy.ConvoyV1alpha1().ReleaseInventories(release.Namespace).Apply(ctx, inventory,
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
	if err != nil {
		return fmt.Errorf("applying inventory %s/%s: %w", release.Namespace, release.Name, err)
	}
	return nil
}

// MergeEntries returns the entries of prev that next does not hold, then
// next: what the controller lists after applying next without pruning.
func MergeEntries(prev, next []convoyv1alpha1.InventoryEntry) []convoyv1alpha1.InventoryEntry {
	var out []convoyv1alpha1.InventoryEntry
	for _, p := range prev {
		if !slices.ContainsFunc(next, func(n convoyv1alpha1.InventoryEntry) bool { return n.ObjectKey == p.ObjectKey }) {
			out = append(out, p)
		}
	}
	return append(out, next...)
}

// UpdateStatus changes the controller's part of the Release status
// (lastAttempted, lastApplied, lastHealthy, rollout) and applies all of it
// with the controller's field manager, so that the fields it leaves alone
// stay. It reads the Release first.
func (a *Applier) UpdateStatus(ctx context.Context, namespace, name string, change func(*convoyv1alpha1.ReleaseStatus)) error {
	release, err := a.Convoy.ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	st := release.Status
	change(&st)
	status := convoyapply.ReleaseStatus()
	record := func(r *convoyv1alpha1.RenderRecord) *convoyapply.RenderRecordApplyConfiguration {
		return convoyapply.RenderRecord().WithRenderRef(r.RenderRef).WithTime(r.Time)
	}
	if st.LastAttempted != nil {
		status.WithLastAttempted(record(st.LastAttempted))
	}
	if st.LastApplied != nil {
		status.WithLastApplied(record(st.LastApplied))
	}
	if st.LastHealthy != nil {
		status.WithLastHealthy(record(st.LastHealthy))
	}
	if st.Rollout != nil {
		status.WithRollout(convoyapply.RolloutStatus().WithPhase(st.Rollout.Phase).WithWave(st.Rollout.Wave))
	}
	_, err = a.Convoy.ConvoyV1alpha1().Releases(namespace).ApplyStatus(ctx,
		convoyapply.Release(name, namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
	if err != nil {
		return fmt.Errorf("applying the status of release %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Record is a RenderRecord of ref at the Applier's clock, to the second.
func (a *Applier) Record(ref string) *convoyv1alpha1.RenderRecord {
	return &convoyv1alpha1.RenderRecord{RenderRef: ref, Time: metav1.NewTime(a.Clock.Now().Truncate(1e9))}
}

// ApplyAll does a whole sync at once, without waiting for any wave: it stores
// r, records lastAttempted, applies every object, lists them in the
// inventory (replacing its entries) and records lastApplied. The e2e tests
// use it for Releases that should look applied.
func (a *Applier) ApplyAll(ctx context.Context, release *convoyv1alpha1.Release, r *render.Render) error {
	if err := a.Store(ctx, release, r); err != nil {
		return err
	}
	record := a.Record(r.Ref)
	if err := a.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) { st.LastAttempted = record }); err != nil {
		return err
	}
	if err := a.ApplyObjects(ctx, release, r.Objects); err != nil {
		return err
	}
	entries := make([]convoyv1alpha1.InventoryEntry, 0, len(r.Objects))
	for _, obj := range r.Objects {
		entries = append(entries, Entry(obj, r.Ref))
	}
	if err := a.SetInventory(ctx, release, entries); err != nil {
		return err
	}
	return a.UpdateStatus(ctx, release.Namespace, release.Name, func(st *convoyv1alpha1.ReleaseStatus) { st.LastApplied = record })
}
