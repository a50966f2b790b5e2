package v1alpha1

import (
	"net/url"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// addConversionFuncs lets the API server decode query parameters into the
// options of the subresources.
func addConversionFuncs(scheme *runtime.Scheme) error {
	return scheme.AddConversionFunc((*url.Values)(nil), (*ReleaseRenderOptions)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*url.Values), b.(*ReleaseRenderOptions)
		out.Render = in.Get("render")
		out.Revision = in.Get("revision")
		return nil
	})
}
