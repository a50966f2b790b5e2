// Package release holds the REST storage of the aggregated group
// subresources.convoy.kumodo.io: the stub releases parent and its
// subresources. The engines behind them live in plain packages (pkg/sync,
// pkg/desired, pkg/compare, pkg/inventory) that the observer's loops share.
package release

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/syncrequest"
)

// Engines are what the REST storage serves from: the same engines the
// observer's loops use.
type Engines struct {
	Releases    convoyclient.ReleasesGetter
	Inventories convoyclient.ReleaseInventoriesGetter
	Targets     cluster.Targets
	Render      *render.Engine
	Checker     *drift.Checker
	Redactor    *redact.Redactor
	Requester   *syncrequest.Requester
}

// Storage is the REST storage of the group's only version, keyed by resource
// path as genericapiserver.APIGroupInfo wants it.
func Storage(e Engines) map[string]rest.Storage {
	return map[string]rest.Storage{
		"releases":         &REST{},
		"releases/diff":    NewDiffREST(e.Releases, e.Inventories, e.Checker),
		"releases/health":  NewHealthREST(e.Releases, e.Inventories),
		"releases/preview": NewPreviewREST(e.Releases, e.Targets, e.Render, e.Redactor),
		"releases/sync":    NewSyncREST(e.Requester),
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
