package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// An ObjectDiff's key is its group, kind, namespace and name: what the
// plugin and the web view index and name it by; the version is no part of it.
func TestObjectDiffKey(t *testing.T) {
	tests := []struct {
		name string
		diff ObjectDiff
		want convoyv1alpha1.ObjectKey
	}{
		{name: "namespaced", diff: ObjectDiff{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Status: ObjectModified},
			want: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{name: "core group, cluster-scoped", diff: ObjectDiff{Version: "v1", Kind: "Namespace", Name: "shop"},
			want: convoyv1alpha1.ObjectKey{Kind: "Namespace", Name: "shop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.diff.Key())
		})
	}
}
