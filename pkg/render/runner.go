package render

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Runner runs the work of a render that runs what the source holds:
// Helm's templates, which do not stop at a deadline, and kustomize, which
// reaches for the network when a kustomization tells it to.
type Runner interface {
	// Template templates a chart, packaged or a directory.
	Template(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error)
	// Build builds a kustomization that kustomize.Check has checked.
	Build(ctx context.Context, req KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error)
}

// InProcess runs charts and kustomizations in this process. Helm's template
// engine does not stop at a deadline and a process that builds
// kustomizations should have no network, so convoy-apiserver uses a
// Sandbox (pkg/sandbox); tests and tools that render trusted sources use this.
type InProcess struct{}

// Template implements Runner.
func (InProcess) Template(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error) {
	return templateChart(ctx, req)
}

// Build implements Runner.
func (InProcess) Build(_ context.Context, req KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error) {
	return buildKustomization(req)
}
