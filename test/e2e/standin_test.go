//go:build unix

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// controllerStandIn does with a render what convoy's controller does: it
// keeps the render in the render store, applies it with server-side apply
// (field manager convoy), lists it in the ReleaseInventory's spec and records
// it in the Release's status.lastAttempted and lastApplied. It is test code:
// convoy's controller is not in this repository, and the observer's tests need
// Releases that look applied.
type controllerStandIn struct {
	t        *testing.T
	dynamic  dynamic.Interface
	mapper   *cluster.Mapper
	store    *render.Store
	renderer *render.Renderer
}

// newStandIn returns a stand-in whose Releases target the local cluster.
func newStandIn(t *testing.T) *controllerStandIn {
	return newStandInOn(t, env.cp.AdminConfig())
}

// newStandInOn returns a stand-in that applies to the cluster of target; the
// render store, inventories and Releases stay on the local cluster.
func newStandInOn(t *testing.T, target *rest.Config) *controllerStandIn {
	t.Helper()
	kube := kubeClient(t)
	dyn, err := dynamic.NewForConfig(target)
	require.NoError(t, err)
	targetKube, err := kubernetes.NewForConfig(target)
	require.NoError(t, err)
	mapper := cluster.NewMapper(targetKube.Discovery(), clock.RealClock{}, 0)
	return &controllerStandIn{
		t:        t,
		dynamic:  dyn,
		mapper:   mapper,
		store:    render.NewStore(kube),
		renderer: render.NewRenderer(render.ClientInputs{Client: kube}, mapper),
	}
}

// release reads the Release as it is now.
func (s *controllerStandIn) release(namespace, name string) *convoyv1alpha1.Release {
	s.t.Helper()
	r, err := convoyClient(s.t).ConvoyV1alpha1().Releases(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(s.t, err)
	return r
}

// render makes a fresh render of the Release, as the controller would.
func (s *controllerStandIn) render(namespace, name string) *render.Render {
	s.t.Helper()
	r, err := s.renderer.Render(context.Background(), s.release(namespace, name))
	require.NoError(s.t, err)
	return r
}

// storeRender keeps r in the render store of the Release.
func (s *controllerStandIn) storeRender(namespace, name string, r *render.Render) {
	s.t.Helper()
	require.NoError(s.t, s.store.Put(context.Background(), s.release(namespace, name), r))
}

// apply renders the Release afresh, stores and applies the render, and
// returns it.
func (s *controllerStandIn) apply(namespace, name string) *render.Render {
	s.t.Helper()
	r := s.render(namespace, name)
	s.applyRender(namespace, name, r)
	return r
}

// applyRender stores and applies r for the Release.
func (s *controllerStandIn) applyRender(namespace, name string, r *render.Render) {
	s.t.Helper()
	ctx := context.Background()
	release := s.release(namespace, name)
	s.storeRender(namespace, name, r)
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	record := &convoyv1alpha1.RenderRecord{RenderRef: r.Ref, Time: now}
	s.updateStatus(namespace, name, func(st *convoyv1alpha1.ReleaseStatus) { st.LastAttempted = record })

	spec := convoyapply.ReleaseInventorySpec()
	for _, obj := range r.Objects {
		s.applyObject(ctx, obj)
		gvk := obj.GroupVersionKind()
		spec.WithEntries(convoyapply.InventoryEntry().
			WithGroup(gvk.Group).WithVersion(gvk.Version).WithKind(gvk.Kind).
			WithNamespace(obj.GetNamespace()).WithName(obj.GetName()).
			WithRenderRef(r.Ref))
	}
	inventory := convoyapply.ReleaseInventory(name, namespace).
		WithOwnerReferences(metav1apply.OwnerReference().
			WithAPIVersion(convoyv1alpha1.SchemeGroupVersion.String()).WithKind("Release").
			WithName(name).WithUID(release.UID).WithController(true)).
		WithSpec(spec)
	_, err := convoyClient(s.t).ConvoyV1alpha1().ReleaseInventories(namespace).Apply(ctx, inventory,
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
	require.NoError(s.t, err)

	s.updateStatus(namespace, name, func(st *convoyv1alpha1.ReleaseStatus) { st.LastApplied = record })
}

// applyObject server-side applies obj with the controller's field manager.
func (s *controllerStandIn) applyObject(ctx context.Context, obj *unstructured.Unstructured) {
	s.t.Helper()
	gvk := obj.GroupVersionKind()
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(s.t, err)
	_, err = s.dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
	require.NoError(s.t, err, "applying %s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
}

// updateStatus changes the controller's part of the Release status
// (lastAttempted, lastApplied, lastHealthy, rollout) and applies all of it
// with the controller's field manager, so that the fields it leaves alone
// stay.
func (s *controllerStandIn) updateStatus(namespace, name string, change func(*convoyv1alpha1.ReleaseStatus)) {
	s.t.Helper()
	st := s.release(namespace, name).Status
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
	_, err := convoyClient(s.t).ConvoyV1alpha1().Releases(namespace).ApplyStatus(context.Background(),
		convoyapply.Release(name, namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
	require.NoError(s.t, err)
}

// rollBack records a rollback to the last healthy render ref, as the
// controller does when a rollout fails.
func (s *controllerStandIn) rollBack(namespace, name, ref string) {
	s.t.Helper()
	s.updateStatus(namespace, name, func(st *convoyv1alpha1.ReleaseStatus) {
		st.Rollout = &convoyv1alpha1.RolloutStatus{Phase: convoyv1alpha1.RolloutRolledBack}
		st.LastHealthy = &convoyv1alpha1.RenderRecord{RenderRef: ref, Time: metav1.Now()}
	})
}

// markHook marks an inventory entry as a lifecycle hook workload, as the
// controller records hooks.
func (s *controllerStandIn) markHook(namespace, name, group, kind, object string, phase convoyv1alpha1.HookPhase) {
	s.t.Helper()
	ctx := context.Background()
	inv, err := convoyClient(s.t).ConvoyV1alpha1().ReleaseInventories(namespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(s.t, err)
	spec := convoyapply.ReleaseInventorySpec()
	for _, e := range inv.Spec.Entries {
		entry := convoyapply.InventoryEntry().
			WithGroup(e.Group).WithVersion(e.Version).WithKind(e.Kind).
			WithNamespace(e.Namespace).WithName(e.Name).WithWave(e.Wave).WithRenderRef(e.RenderRef)
		if e.Group == group && e.Kind == kind && e.Name == object {
			entry.WithHook(convoyapply.Hook().WithPhase(phase).WithRunAfter(convoyv1alpha1.HookRunAfterApplied))
		}
		spec.WithEntries(entry)
	}
	_, err = convoyClient(s.t).ConvoyV1alpha1().ReleaseInventories(namespace).Apply(ctx,
		convoyapply.ReleaseInventory(name, namespace).WithSpec(spec),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerController, Force: true})
	require.NoError(s.t, err)
}
