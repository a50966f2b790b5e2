package desired

import (
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// For returns the Resolver of a Release that acts with access: it renders
// with engine (its chart runner and limits), reads the Release's inputs and
// its render store on the cluster convoy-apiserver runs in as the Release's
// identity (access.Home), and scopes the namespaces of a fresh render with
// the REST mapper of its target cluster, and verifies the source of its
// stored renders as the Release's identity. With a cache (may be nil), a fresh
// render whose inputs did not change is reused. Building one costs no
// request.
func For(engine *render.Engine, cache *RenderCache, access *cluster.Access) *Resolver {
	fresh := engine.Renderer(source.ClientInputs{Client: access.Home}, render.MapperScoper{Mapper: access.Target.Mapper})
	var renderer Renderer = fresh
	if cache != nil {
		renderer = cache.Renderer(renderer, access)
	}
	return NewResolver(renderer, engine.Store(access.Home), fresh)
}
