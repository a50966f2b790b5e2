package drift

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// liveObjects answers Get from a set of names: present, an error, or absent.
type liveObjects struct {
	present map[string]bool
	errs    map[string]error
	gets    int
}

func (l *liveObjects) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	l.gets++
	if err := l.errs[name]; err != nil {
		return nil, err
	}
	if l.present[name] {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(namespace)
		u.SetName(name)
		return u, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: gvk.Kind}, name)
}

func configMap(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("shop")
	u.SetName(name)
	return u
}

func entry(kind, name string) convoyv1alpha1.InventoryEntry {
	return convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Kind: kind, Namespace: "shop", Name: name}, Version: "v1", RenderRef: "old"}
}

func TestExtraObjects(t *testing.T) {
	hook := entry("ConfigMap", "migrate")
	hook.Hook = &convoyv1alpha1.Hook{Phase: convoyv1alpha1.HookPreSync}
	cases := []struct {
		name    string
		entries []convoyv1alpha1.InventoryEntry
		live    liveObjects
		want    []string // names; "name!" when listed with a message
		gets    int
	}{
		{name: "declared objects are not extra", entries: []convoyv1alpha1.InventoryEntry{entry("ConfigMap", "a")},
			live: liveObjects{present: map[string]bool{"a": true}}},
		{name: "an entry gone from the render that exists", entries: []convoyv1alpha1.InventoryEntry{entry("ConfigMap", "a"), entry("ConfigMap", "old")},
			live: liveObjects{present: map[string]bool{"a": true, "old": true}}, want: []string{"old"}, gets: 1},
		{name: "an entry gone from the render and from the cluster", entries: []convoyv1alpha1.InventoryEntry{entry("ConfigMap", "old")},
			live: liveObjects{}, gets: 1},
		{name: "same name, another kind", entries: []convoyv1alpha1.InventoryEntry{entry("Secret", "a")},
			live: liveObjects{present: map[string]bool{"a": true}}, want: []string{"a"}, gets: 1},
		{name: "hooks are left out", entries: []convoyv1alpha1.InventoryEntry{hook},
			live: liveObjects{present: map[string]bool{"migrate": true}}},
		{name: "a kind no longer served", entries: []convoyv1alpha1.InventoryEntry{entry("Widget", "w")},
			live: liveObjects{errs: map[string]error{"w": &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Widget"}}}}, gets: 1},
		{name: "an entry that cannot be read", entries: []convoyv1alpha1.InventoryEntry{entry("ConfigMap", "secret")},
			live: liveObjects{errs: map[string]error{"secret": apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "secret", errors.New("no"))}},
			want: []string{"secret!"}, gets: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range extraObjects(context.Background(), &tc.live, []*unstructured.Unstructured{configMap("a")}, tc.entries) {
				name := e.Name
				if e.Message != "" {
					name += "!"
				}
				assert.Equal(t, "old", e.RenderRef)
				got = append(got, name)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.gets, tc.live.gets)
		})
	}
}

func TestExtraObjectsBounds(t *testing.T) {
	var entries []convoyv1alpha1.InventoryEntry
	present := map[string]bool{}
	for i := range MaxExtraReads + 10 {
		name := fmt.Sprintf("gone-%d", i)
		entries = append(entries, entry("ConfigMap", name))
		present[name] = true
	}
	live := &liveObjects{present: present}
	assert.Len(t, extraObjects(context.Background(), live, nil, entries), MaxExtraReads)
	assert.Equal(t, MaxExtraReads, live.gets)
}
