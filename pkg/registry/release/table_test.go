package release

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// Each subresource is one row of its own columns (kubectl get --raw ... or
// kubectl convoy -o wide); another kind is refused.
func TestTables(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 12, 4, 10, 0, 0, 7000, time.UTC))
	tests := []struct {
		name    string
		table   rest.TableConvertor
		object  runtime.Object
		columns int
		cells   []any
	}{
		{name: "refresh", table: refreshTable, columns: 3,
			object: &subresourcesv1alpha1.ReleaseRefresh{ObjectMeta: metav1.ObjectMeta{Name: "web"}, RequestedAt: &at, RequestedBy: "alice"},
			cells:  []any{"web", "2026-12-04T10:00:00.000007Z", "alice"}},
		{name: "refresh without a time", table: refreshTable, columns: 3,
			object: &subresourcesv1alpha1.ReleaseRefresh{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
			cells:  []any{"web", "", ""}},
		{name: "preview", table: previewTable, columns: 4,
			object: &subresourcesv1alpha1.ReleasePreview{ObjectMeta: metav1.ObjectMeta{Name: "web"}, RenderRef: "0123456789abcdef",
				RenderSource: subresourcesv1alpha1.RenderSourcePinned, Objects: []runtime.RawExtension{{}, {}}},
			cells: []any{"web", "0123456789abcdef", "Pinned", int64(2)}},
		{name: "diff", table: diffTable, columns: 6,
			object: &subresourcesv1alpha1.ReleaseDiff{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Result: subresourcesv1alpha1.DiffDrifted,
				Reason: "Drifted", RenderRef: "0123456789abcdef", Message: "Deployment.apps shop/web: spec.replicas",
				Objects: []subresourcesv1alpha1.ObjectDiff{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
			cells: []any{"web", "Drifted", "Drifted", "0123456789abcdef", int64(3), "Deployment.apps shop/web: spec.replicas"}},
		{name: "health", table: healthTable, columns: 6,
			object: &subresourcesv1alpha1.ReleaseHealth{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Healthy:       &metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "Progressing", Message: "1 of 3 replicas available"},
				HealthSummary: &convoyv1alpha1.HealthSummary{Total: 4, Healthy: 3, Progressing: 1}},
			cells: []any{"web", "False", "Progressing", int64(4), int64(3), "1 of 3 replicas available"}},
		{name: "health not assessed yet", table: healthTable, columns: 6,
			object: &subresourcesv1alpha1.ReleaseHealth{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
			cells:  []any{"web", "", "", int64(0), int64(0), ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := tc.table.ConvertToTable(context.Background(), tc.object, nil)
			require.NoError(t, err)
			assert.Len(t, table.ColumnDefinitions, tc.columns)
			require.Len(t, table.Rows, 1)
			assert.Equal(t, tc.cells, table.Rows[0].Cells)
			assert.Len(t, table.Rows[0].Cells, tc.columns)
			assert.Same(t, tc.object, table.Rows[0].Object.Object)

			_, err = tc.table.ConvertToTable(context.Background(), &subresourcesv1alpha1.ReleaseSync{}, nil)
			assert.ErrorContains(t, err, "cannot convert *v1alpha1.ReleaseSync to a table")
		})
	}
}
