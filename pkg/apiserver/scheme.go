// Package apiserver is the composition root of convoy-apiserver: the scheme
// and codecs of subresources.convoy.kumodo.io, the Config that options fill
// in, and Config.Complete().New(), which wires the engines, the REST storage
// of pkg/registry on them, and the observer's loops on the same engines.
package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

var (
	// Scheme holds the types the server decodes and encodes.
	Scheme = runtime.NewScheme()
	// Codecs serializes the types of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	utilruntime.Must(subresourcesv1alpha1.AddToScheme(Scheme))
	// The group has one version and no internal types: the versioned types
	// stand in for the internal version the request handlers convert to.
	internal := schema.GroupVersion{Group: subresourcesv1alpha1.GroupName, Version: runtime.APIVersionInternal}
	Scheme.AddKnownTypes(internal,
		&subresourcesv1alpha1.Release{},
		&subresourcesv1alpha1.ReleaseDiff{},
		&subresourcesv1alpha1.ReleasePreview{},
		&subresourcesv1alpha1.ReleaseHealth{},
		&subresourcesv1alpha1.ReleaseSync{},
		&subresourcesv1alpha1.ReleaseRenderOptions{},
	)
	utilruntime.Must(Scheme.SetVersionPriority(subresourcesv1alpha1.SchemeGroupVersion))

	// Options and status types the generic server needs.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}
