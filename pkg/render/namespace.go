package render

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// defaultNamespaces gives namespaced objects that name no namespace the
// target namespace, and removes the namespace of cluster-scoped objects.
//
// The scope of a kind comes first from a CustomResourceDefinition in the
// render itself (spec.group, spec.names.kind, spec.scope), so that a render
// that brings its own CRDs does not change while they get installed; then
// from the Scoper. A kind that neither knows (the Scoper returns an error for
// which meta.IsNoMatchError is true, or the Scoper is nil) keeps the
// namespace it has, set or not: the render does not fail on it, the compare
// reports the unknown kind later. Any other Scoper error fails the render
// with InputUnavailable, as a guess would give a different renderRef.
func (r *Renderer) defaultNamespaces(objs []*unstructured.Unstructured, target string) *failure.Error {
	scopes := crdScopes(objs)
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		namespaced, known := scopes[gvk.GroupKind()]
		if !known && r.scoper != nil {
			var err error
			namespaced, err = r.scoper.IsNamespaced(gvk)
			switch {
			case meta.IsNoMatchError(err):
			case err != nil:
				return sourcefailure.Unavailable(err, "scope of %s %s", gvk.GroupVersion(), gvk.Kind)
			default:
				known = true
				scopes[gvk.GroupKind()] = namespaced
			}
		}
		switch {
		case !known:
		case !namespaced:
			u.SetNamespace("")
		case u.GetNamespace() == "":
			u.SetNamespace(target)
		}
	}
	return nil
}

// crdScopes reads the scope of the kinds that the CustomResourceDefinitions
// among objs define: true for Namespaced, false for Cluster.
func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	scopes := map[schema.GroupKind]bool{}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		if gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		if group == "" || kind == "" {
			continue
		}
		switch scope {
		case "Namespaced":
			scopes[schema.GroupKind{Group: group, Kind: kind}] = true
		case "Cluster":
			scopes[schema.GroupKind{Group: group, Kind: kind}] = false
		}
	}
	return scopes
}
