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
