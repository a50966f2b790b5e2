package desired

import (
	"context"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// Targets gives the clients of a Release's target cluster.
type Targets interface {
	ForRelease(ctx context.Context, release *convoyv1alpha1.Release) (*cluster.Target, error)
}

// TargetRenderer renders a Release with the REST mapper of its target
// cluster, which tells which kinds are namespaced there. A target that
// cannot be had returns its *cluster.Error.
type TargetRenderer struct {
	Inputs  render.Inputs
	Targets Targets
}

// Render implements Renderer.
func (r TargetRenderer) Render(ctx context.Context, release *convoyv1alpha1.Release) (*render.Render, error) {
	target, err := r.Targets.ForRelease(ctx, release)
	if err != nil {
		return nil, err
	}
	return render.NewRenderer(r.Inputs, target.Mapper).Render(ctx, release)
}
