package compare

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// Client is one target cluster as the engine sees it: *cluster.Reader, or a
// fake in tests. Implementations must be safe for concurrent use and must
// not modify the objects they are given.
type Client interface {
	// Get reads the live object; a missing object returns an error with
	// apierrors.IsNotFound.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// DryRunApply sends obj as a server-side apply with dryRun=All, the
	// field manager of convoy's controller and force, and returns the
	// result.
	DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

var (
	_ Client      = &cluster.Reader{}
	_ Identified  = &cluster.Reader{}
	_ Located     = &cluster.Reader{}
	_ Lister      = &cluster.Reader{}
	_ ReaderAhead = &cluster.Reader{}
)

// Identified is a Client that names whom its requests are made as. The
// Engine says so in the message of a refusal (401, 403).
type Identified interface {
	Who() string
}
