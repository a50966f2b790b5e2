package release

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// tableConvertor turns the objects of one subresource into rows of a table.
type tableConvertor[T runtime.Object] struct {
	columns []metav1.TableColumnDefinition
	row     func(T) []any
}

// ConvertToTable implements rest.TableConvertor.
func (c tableConvertor[T]) ConvertToTable(_ context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	typed, ok := object.(T)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T to a table", object)
	}
	table := &metav1.Table{ColumnDefinitions: c.columns}
	if m, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	table.Rows = []metav1.TableRow{{Cells: c.row(typed), Object: runtime.RawExtension{Object: object}}}
	return table, nil
}

var syncTable = tableConvertor[*subresourcesv1alpha1.ReleaseSync]{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the Release"},
		{Name: "Requested At", Type: "string", Format: "date-time", Description: "Time recorded in the sync annotation"},
		{Name: "Requested By", Type: "string", Description: "User who asked for the sync"},
	},
	row: func(s *subresourcesv1alpha1.ReleaseSync) []any {
		at := ""
		if s.RequestedAt != nil {
			at = s.RequestedAt.Format(metav1.RFC3339Micro)
		}
		return []any{s.Name, at, s.RequestedBy}
	},
}

var refreshTable = tableConvertor[*subresourcesv1alpha1.ReleaseRefresh]{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the Release"},
		{Name: "Requested At", Type: "string", Format: "date-time", Description: "Time recorded in the refresh annotation"},
		{Name: "Requested By", Type: "string", Description: "User who asked for the refresh"},
	},
	row: func(s *subresourcesv1alpha1.ReleaseRefresh) []any {
		at := ""
		if s.RequestedAt != nil {
			at = s.RequestedAt.Format(metav1.RFC3339Micro)
		}
		return []any{s.Name, at, s.RequestedBy}
	},
}

var previewTable = tableConvertor[*subresourcesv1alpha1.ReleasePreview]{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the Release"},
		{Name: "Render", Type: "string", Description: "renderRef of the desired render"},
		{Name: "Source", Type: "string", Description: "Where the render comes from: Pinned, LastHealthy, Fresh or Stored"},
		{Name: "Objects", Type: "integer", Description: "Number of objects in the render"},
	},
	row: func(p *subresourcesv1alpha1.ReleasePreview) []any {
		return []any{p.Name, p.RenderRef, string(p.RenderSource), int64(len(p.Objects))}
	},
}

var diffTable = tableConvertor[*subresourcesv1alpha1.ReleaseDiff]{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the Release"},
		{Name: "Result", Type: "string", Description: "InSync, Drifted or Undetermined"},
		{Name: "Reason", Type: "string", Description: "Why the result is what it is"},
		{Name: "Render", Type: "string", Description: "renderRef of the compared render"},
		{Name: "Objects", Type: "integer", Description: "Number of objects compared"},
		{Name: "Message", Type: "string", Description: "The first drifted or failing object"},
	},
	row: func(d *subresourcesv1alpha1.ReleaseDiff) []any {
		return []any{d.Name, string(d.Result), d.Reason, d.RenderRef, int64(len(d.Objects)), d.Message}
	},
}

var healthTable = tableConvertor[*subresourcesv1alpha1.ReleaseHealth]{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the Release"},
		{Name: "Healthy", Type: "string", Description: "Status of the Healthy condition"},
		{Name: "Reason", Type: "string", Description: "Reason of the Healthy condition"},
		{Name: "Total", Type: "integer", Description: "Resources assessed"},
		{Name: "Healthy Resources", Type: "integer", Description: "Resources Healthy"},
		{Name: "Message", Type: "string", Description: "Message of the Healthy condition"},
	},
	row: func(h *subresourcesv1alpha1.ReleaseHealth) []any {
		status, reason, message := "", "", ""
		if c := h.Healthy; c != nil {
			status, reason, message = string(c.Status), c.Reason, c.Message
		}
		var total, healthy int64
		if s := h.HealthSummary; s != nil {
			total, healthy = int64(s.Total), int64(s.Healthy)
		}
		return []any{h.Name, status, reason, total, healthy, message}
	},
}
