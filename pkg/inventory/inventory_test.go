package inventory

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
)

// An entry message past the CRD's 1,024 is cut, so the status write lands;
// an unchanged status is not written again.
func TestWriteStatus(t *testing.T) {
	key := convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	inv := &convoyv1alpha1.ReleaseInventory{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       convoyv1alpha1.ReleaseInventorySpec{Entries: []convoyv1alpha1.InventoryEntry{{ObjectKey: key, Version: "v1", RenderRef: "aaaaaaaaaaaaaaaa"}}},
	}
	client := fake.NewClientset(inv)
	w := NewWriter(client.ConvoyV1alpha1())
	entries := []convoyv1alpha1.InventoryEntryStatus{{ObjectKey: key, State: convoyv1alpha1.HealthProgressing,
		Message: strings.Repeat("wäiting for rollout; ", 200), AssessedRenderRef: "aaaaaaaaaaaaaaaa"}}
	wrote, err := w.WriteStatus(context.Background(), inv, entries)
	require.NoError(t, err)
	assert.True(t, wrote)
	got, err := client.ConvoyV1alpha1().ReleaseInventories("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, got.Status.Entries, 1)
	msg := got.Status.Entries[0].Message
	assert.LessOrEqual(t, len(msg), 1024)
	assert.True(t, utf8.ValidString(msg))
	assert.Contains(t, msg, "truncated]")

	wrote, err = w.WriteStatus(context.Background(), got, got.Status.Entries)
	require.NoError(t, err)
	assert.False(t, wrote, "nothing changed")
}
