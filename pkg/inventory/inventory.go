// Package inventory reads ReleaseInventories and writes the observer's part of
// them: status.entries, with server-side apply and the field manager
// convoy-observe. The health loop and GET /health share it.
package inventory

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	convoyapply "github.com/kumodo/convoy-apiserver/pkg/generated/applyconfiguration/convoy/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Key identifies an entry of an inventory.
type Key = convoyv1alpha1.ObjectKey

// StatusOf returns the status entries of inv by key.
func StatusOf(inv *convoyv1alpha1.ReleaseInventory) map[Key]convoyv1alpha1.InventoryEntryStatus {
	out := map[Key]convoyv1alpha1.InventoryEntryStatus{}
	if inv == nil {
		return out
	}
	for _, e := range inv.Status.Entries {
		out[e.ObjectKey] = e
	}
	return out
}

// Rows joins the spec and status entries of inv into the rows of GET /health,
// in the order of spec.entries. An entry the observer has not assessed yet has
// no state.
func Rows(inv *convoyv1alpha1.ReleaseInventory) []subresourcesv1alpha1.EntryHealth {
	if inv == nil {
		return nil
	}
	status := StatusOf(inv)
	rows := make([]subresourcesv1alpha1.EntryHealth, 0, len(inv.Spec.Entries))
	for _, e := range inv.Spec.Entries {
		row := subresourcesv1alpha1.EntryHealth{ObjectKey: e.ObjectKey, Version: e.Version, RenderRef: e.RenderRef}
		if s, ok := status[e.ObjectKey]; ok {
			row.AssessedRenderRef = s.AssessedRenderRef
			row.State = s.State
			row.Message = s.Message
			row.FirstUnhealthy = s.FirstUnhealthy
			row.HookPhase = s.HookPhase
		}
		rows = append(rows, row)
	}
	return rows
}

// Writer writes status.entries of ReleaseInventories.
type Writer struct {
	inventories convoyclient.ReleaseInventoriesGetter
}

// NewWriter returns a Writer.
func NewWriter(inventories convoyclient.ReleaseInventoriesGetter) *Writer {
	return &Writer{inventories: inventories}
}

// WriteStatus sets status.entries of inv to entries, unless they are already
// that, and reports whether it wrote. entries is the whole list the observer
// owns: an entry left out is removed.
func (w *Writer) WriteStatus(ctx context.Context, inv *convoyv1alpha1.ReleaseInventory, entries []convoyv1alpha1.InventoryEntryStatus) (bool, error) {
	if equality.Semantic.DeepEqual(inv.Status.Entries, entries) {
		return false, nil
	}
	status := convoyapply.ReleaseInventoryStatus()
	for _, e := range entries {
		a := convoyapply.InventoryEntryStatus().
			WithGroup(e.Group).WithKind(e.Kind).WithNamespace(e.Namespace).WithName(e.Name).
			WithState(e.State)
		if e.Message != "" {
			a.WithMessage(truncate.String(e.Message, truncate.InventoryMessage))
		}
		if e.FirstUnhealthy != nil {
			a.WithFirstUnhealthy(*e.FirstUnhealthy)
		}
		if e.AssessedRenderRef != "" {
			a.WithAssessedRenderRef(e.AssessedRenderRef)
		}
		if e.LastTransitionTime != nil {
			a.WithLastTransitionTime(*e.LastTransitionTime)
		}
		if e.HookPhase != "" {
			a.WithHookPhase(e.HookPhase)
		}
		status.WithEntries(a)
	}
	_, err := w.inventories.ReleaseInventories(inv.Namespace).ApplyStatus(ctx,
		convoyapply.ReleaseInventory(inv.Name, inv.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: convoyv1alpha1.FieldManagerObserver, Force: true})
	if err != nil {
		return false, fmt.Errorf("writing status.entries of inventory %s/%s: %w", inv.Namespace, inv.Name, err)
	}
	return true, nil
}
