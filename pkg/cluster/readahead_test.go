package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMapObj(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// pagedReader is a Reader over a fake cluster holding n ConfigMaps cm-I in
// the namespace shop, whose LISTs are paged as kube-apiserver pages them
// (limit, continue, remainingItemCount). It counts GETs and LISTs.
func pagedReader(t *testing.T, n int, listErr error) (*Reader, *int, *int) {
	t.Helper()
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, configMapObj("shop", fmt.Sprintf("cm-%d", i)))
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList"}, objs...)
	gets, lists := new(int), new(int)
	dyn.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		*gets++
		return false, nil, nil
	})
	dyn.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		*lists++
		if listErr != nil {
			return true, nil, listErr
		}
		opts := a.(clienttesting.ListActionImpl).ListOptions
		from, _ := strconv.Atoi(opts.Continue)
		to := n
		if opts.Limit > 0 {
			to = min(n, from+int(opts.Limit))
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("v1")
		list.SetKind("ConfigMapList")
		for i := from; i < to; i++ {
			list.Items = append(list.Items, *configMapObj("shop", fmt.Sprintf("cm-%d", i)))
		}
		if to < n {
			list.SetContinue(strconv.Itoa(to))
			rest := int64(n - to)
			list.SetRemainingItemCount(&rest)
		}
		return true, list, nil
	})
	r := NewReader(dyn, mapper, "ServiceAccount shop/deployer")
	r.collections = NewCollections(clocktesting.NewFakePassiveClock(time.Now()))
	return r, gets, lists
}

func desiredConfigMaps(names ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, n := range names {
		out = append(out, configMapObj("shop", n))
	}
	return out
}

func TestReadAhead(t *testing.T) {
	ctx := context.Background()

	t.Run("a small collection is listed once and answers the reads", func(t *testing.T) {
		r, gets, lists := pagedReader(t, 12, nil)
		r.ReadAhead(ctx, desiredConfigMaps("cm-1", "cm-2", "gone"))
		assert.Equal(t, 1, *lists)
		got, err := r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", "cm-1")
		require.NoError(t, err)
		assert.Equal(t, "cm-1", got.GetName())
		_, err = r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", "gone")
		assert.True(t, apierrors.IsNotFound(err), "listed whole: what the LIST did not see does not exist: %v", err)
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status)
		assert.Equal(t, "gone", status.Status().Details.Name, "a missing object, not a missing resource")
		assert.Zero(t, *gets)
		assert.Equal(t, 12, r.knownSize(snapshotKey{resource: configMapsGVR, namespace: "shop"}))
	})

	t.Run("one object is read, not listed", func(t *testing.T) {
		r, gets, lists := pagedReader(t, 5, nil)
		r.ReadAhead(ctx, desiredConfigMaps("cm-1"))
		_, err := r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", "cm-1")
		require.NoError(t, err)
		assert.Zero(t, *lists)
		assert.Equal(t, 1, *gets)
	})

	t.Run("a large collection costs at most the reads it saves, once", func(t *testing.T) {
		r, gets, lists := pagedReader(t, 5000, nil)
		// 3 objects: worth 30 listed objects. cm-5 is on the first page,
		// cm-4000 past the budget.
		r.ReadAhead(ctx, desiredConfigMaps("cm-5", "cm-4000", "cm-4001"))
		assert.Equal(t, 1, *lists, "one page of 30")
		for _, name := range []string{"cm-5", "cm-4000", "cm-4001"} {
			_, err := r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", name)
			require.NoError(t, err, name)
		}
		assert.Equal(t, 2, *gets, "cm-5 from the page, the others read")
		assert.Equal(t, 5000, r.knownSize(snapshotKey{resource: configMapsGVR, namespace: "shop"}), "the size from remainingItemCount")

		// The next pass knows: no LIST.
		r.ahead = nil
		r.ReadAhead(ctx, desiredConfigMaps("cm-5", "cm-6"))
		assert.Equal(t, 1, *lists)
	})

	t.Run("paged while within the budget", func(t *testing.T) {
		r, gets, lists := pagedReader(t, 1200, nil)
		names := make([]string, 200) // worth 2,000 listed objects: pages of 500
		for i := range names {
			names[i] = fmt.Sprintf("cm-%d", i*6)
		}
		r.ReadAhead(ctx, desiredConfigMaps(names...))
		assert.Equal(t, 3, *lists)
		for _, name := range names {
			_, err := r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", name)
			require.NoError(t, err)
		}
		assert.Zero(t, *gets)
	})

	t.Run("an identity that may not list reads one by one, and is not asked again", func(t *testing.T) {
		r, gets, lists := pagedReader(t, 10, apierrors.NewForbidden(configMapsGVR.GroupResource(), "", errors.New("no list")))
		r.ReadAhead(ctx, desiredConfigMaps("cm-1", "cm-2"))
		_, err := r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", "cm-1")
		require.NoError(t, err)
		assert.Equal(t, 1, *gets)
		r.ahead = nil
		r.ReadAhead(ctx, desiredConfigMaps("cm-1", "cm-2"))
		assert.Equal(t, 1, *lists, "not listed again")
	})
}
