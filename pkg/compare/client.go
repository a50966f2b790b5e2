package compare

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cluster is one target cluster, as one identity, as the Engine sees it: the
// one seam between the engine and the clients of a cluster, with every
// method the engine calls (why one interface: docs/contributors/internals.md,
// "The drift loop"). *cluster.Reader implements it (asserted in the tests),
// and so do the fakes of the tests. Implementations must be safe for
// concurrent use once ReadAhead returned, and must not modify the objects
// they are given.
type Cluster interface {
	// Who names whom the requests are made as ("ServiceAccount NS/NAME"),
	// for the message of a refusal (401, 403) and the key of the
	// ResultCache; "" is named "the client".
	Who() string
	// ClusterName names the cluster, "" for the local one: with Who, it keys
	// the ResultCache. (Not Cluster: a wrapper that embeds a Cluster has a
	// field of that name.)
	ClusterName() string
	// Get reads the live object; a missing object returns an error with
	// apierrors.IsNotFound.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// DryRunApply sends obj as a server-side apply with dryRun=All, the
	// field manager of convoy's controller and force, and returns the
	// result.
	DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// ResourceVersion tells the resourceVersion of a live object, and
	// whether it exists, without reading it (a shared metadata-only LIST).
	// known is false when it cannot tell (no LIST, or the LIST failed): the
	// Engine then reads.
	ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (rv string, exists, known bool)
	// ReadAhead is given, before the compare reads them one by one, the
	// objects it is about to read: it may read them with a LIST per
	// resource where that costs less than a GET per object, and answer the
	// Gets that follow from it. It may do nothing.
	ReadAhead(ctx context.Context, objects []*unstructured.Unstructured)
}
