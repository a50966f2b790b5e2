//go:build unix

package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/standin"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// controllerStandIn does with a render what convoy's controller does, with
// the Applier of internal/standin (the development stand-in that make run
// runs): it keeps the render in the render store, applies it with
// server-side apply (field manager convoy), lists it in the ReleaseInventory's
// spec and records it in the Release's status.lastAttempted and lastApplied.
// It applies as the admin, so that the tests of tenancy can make Releases
// whose identity may do nothing look applied.
type controllerStandIn struct {
	t       *testing.T
	applier *standin.Applier
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
	clients := &standin.Clients{Home: kube, Dynamic: dyn, Mapper: cluster.NewMapper(targetKube.Discovery(), clock.RealClock{}, 0)}
	return &controllerStandIn{t: t, applier: &standin.Applier{
		Convoy:  convoyClient(t),
		Clients: func(context.Context, *convoyv1alpha1.Release) (*standin.Clients, error) { return clients, nil },
		Clock:   clock.RealClock{},
		Renders: kube,
		// The registries and repositories of the tests run on loopback.
		// No cache: a tag moved since the last apply is applied.
		Engine: render.NewEngine(source.NewFetcher(source.Options{
			Policy: egress.AddressPolicy{AllowLoopback: true}, CacheBytes: -1}), nil, render.Limits{}),
	}}
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
	r, err := s.applier.Render(context.Background(), s.release(namespace, name))
	require.NoError(s.t, err)
	return r
}

// storeRender keeps r in the render store of the Release.
func (s *controllerStandIn) storeRender(namespace, name string, r *render.Render) {
	s.t.Helper()
	require.NoError(s.t, s.applier.Store(context.Background(), s.release(namespace, name), r))
}

// apply renders the Release afresh, stores and applies the render, and
// returns it.
func (s *controllerStandIn) apply(namespace, name string) *render.Render {
	s.t.Helper()
	r := s.render(namespace, name)
	s.applyRender(namespace, name, r)
	return r
}

// applyRender stores and applies r for the Release, all of it at once.
func (s *controllerStandIn) applyRender(namespace, name string, r *render.Render) {
	s.t.Helper()
	require.NoError(s.t, s.applier.ApplyAll(context.Background(), s.release(namespace, name), r))
}

// updateStatus changes the controller's part of the Release status.
func (s *controllerStandIn) updateStatus(namespace, name string, change func(*convoyv1alpha1.ReleaseStatus)) {
	s.t.Helper()
	require.NoError(s.t, s.applier.UpdateStatus(context.Background(), namespace, name, change))
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
