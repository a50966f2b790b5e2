// Package release holds the REST storage of the aggregated group
// subresources.convoy.kumodo.io: the stub releases parent and its
// subresources. The engines behind them live in plain packages that the
// observer's loops share: /diff and /preview talk to pkg/drift only, /health
// reads through pkg/inventory, /sync and /refresh record through
// pkg/requests.
package release

import (
	"context"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/requests"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// Engines are what the REST storage serves from: the same engines the
// observer's loops use.
type Engines struct {
	Releases    convoyclient.ReleasesGetter
	Inventories convoyclient.ReleaseInventoriesGetter
	Checker     *drift.Checker
	Redactor    *redact.Redactor
	Requester   *requests.Requester
}

// Storage is the REST storage of the group's only version, keyed by resource
// path as genericapiserver.APIGroupInfo wants it.
func Storage(e Engines) map[string]rest.Storage {
	return map[string]rest.Storage{
		"releases":         &REST{},
		"releases/diff":    NewDiffREST(e.Releases, e.Checker),
		"releases/health":  NewHealthREST(e.Releases, e.Inventories),
		"releases/preview": NewPreviewREST(e.Releases, e.Checker, e.Redactor),
		"releases/sync":    NewSyncREST(e.Requester),
		"releases/refresh": NewRefreshREST(e.Requester),
	}
}

// REST is the stub parent of the subresources. It serves no verb: the Release
// objects are the CRDs of convoy.kumodo.io, and the API server needs a parent
// storage to install subresources under.
type REST struct{}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// New implements rest.Storage.
func (*REST) New() runtime.Object { return &subresourcesv1alpha1.Release{} }

// Destroy implements rest.Storage.
func (*REST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*REST) NamespaceScoped() bool { return true }

// GetSingularName implements rest.SingularNameProvider.
func (*REST) GetSingularName() string { return "release" }

var renderRefPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// getRelease reads the Release of the request and its options (?render=,
// ?revision=), refusing malformed ones with a 400.
func getRelease(ctx context.Context, releases convoyclient.ReleasesGetter, name string, options runtime.Object) (*convoyv1alpha1.Release, *subresourcesv1alpha1.ReleaseRenderOptions, error) {
	opts, ok := options.(*subresourcesv1alpha1.ReleaseRenderOptions)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("unexpected options %T", options))
	}
	if opts.Render != "" && !renderRefPattern.MatchString(opts.Render) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("render=%q is not a renderRef (16 lower-case hex digits)", opts.Render))
	}
	if opts.Revision != "" {
		if opts.Render != "" {
			return nil, nil, apierrors.NewBadRequest("render and revision cannot both be asked for: a stored render has its own revision")
		}
		if err := source.CheckRevision(opts.Revision); err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || namespace == "" {
		return nil, nil, apierrors.NewBadRequest("a namespace is required")
	}
	release, err := releases.Releases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, apierrors.NewNotFound(subresourcesv1alpha1.Resource("releases"), name)
	}
	if err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading release %s/%s: %w", namespace, name, err))
	}
	return release, opts, nil
}
