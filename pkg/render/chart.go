package render

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// renderChart renders a packaged Helm chart: it reads the Release's values
// (spec.content: the chart's own valuesFiles, and valuesFrom as its
// identity) here, and templates the chart with the
// Engine's Runner, which convoy-apiserver runs in a child process
// (pkg/sandbox) so that a runaway template can be stopped.
func (r *Renderer) renderChart(ctx context.Context, release *convoyv1alpha1.Release, where string, tgz []byte) ([]*unstructured.Unstructured, *failure.Error) {
	vals, verr := r.values(ctx, release, where, packagedFiles(where, tgz))
	if verr != nil {
		return nil, verr
	}
	return r.engine.runner.Template(ctx, ChartRequest{
		Where: where, Chart: tgz, Values: vals, Name: release.Name, Namespace: targetNamespace(release),
		MaxObjects: r.engine.limits.MaxObjects,
	})
}

// ChartRequest is what templating a chart needs; it reads nothing.
type ChartRequest struct {
	// Where names the chart in messages: "configMap NS/NAME binaryData chart.tgz".
	Where string `json:"where"`
	// Chart is the packaged chart; when nil, Files are the chart's
	// directory.
	Chart []byte `json:"chart,omitempty"`
	// Files are the files of a chart's directory, by path relative to it
	// (Chart.yaml, templates/..., charts/...).
	Files map[string][]byte `json:"files,omitempty"`
	// Values are the user-supplied values (spec.content).
	Values map[string]any `json:"values"`
	// Name and Namespace are the release name and namespace Helm renders with.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// MaxObjects is the most objects the chart may give: the templating
	// stops with TooManyObjects at the first object past it.
	MaxObjects int `json:"maxObjects"`
}

// templateChart templates a Helm chart into the objects helm install would
// create from it, as helm template --no-hooks does, with Helm's SDK, Helm's
// default capabilities (capabilities) and no cluster access: hooks are
// left out, crds/ files parsed as they are, values.schema.json enforced
// (validateValues). docs/users/directories.md ("Charts as Helm renders
// them") says what differs from the Helm CLI; TestChartConformsToHelm
// compares with Helm's own template action. Helm's template engine does
// not stop when ctx ends (only lookup reads it): run it where it can be
// stopped (pkg/sandbox).
func templateChart(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error) {
	where := req.Where
	ch, err := loadChart(req)
	if err != nil {
		return nil, failure.New(ReasonChartInvalid, err, "%s is not a Helm chart", where)
	}
	if typ := ch.Metadata.Type; typ != "" && typ != "application" {
		return nil, failure.New(ReasonChartInvalid, nil, "%s: chart %s is a %s chart, which cannot be installed", where, ch.Name(), typ)
	}
	caps := capabilities().Copy()
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, failure.New(ReasonChartInvalid, nil, "%s: chart %s requires kubeVersion %s, which is incompatible with Kubernetes %s (Helm's default capabilities)",
			where, ch.Name(), kv, caps.KubeVersion.Version)
	}

	vals := req.Values
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, failure.New(ReasonChartInvalid, err, "%s: chart %s dependencies", where, ch.Name())
	}
	opts := common.ReleaseOptions{
		Name:      req.Name,
		Namespace: req.Namespace,
		Revision:  1,
		IsInstall: true,
	}
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, true)
	if err != nil {
		return nil, failure.New(ReasonValuesInvalid, err, "%s: values do not coalesce with chart %s", where, ch.Name())
	}
	if coalesced, ok := top["Values"].(common.Values); ok {
		if err := validateValues(ch, coalesced.AsMap()); err != nil {
			return nil, failure.New(ReasonValuesInvalid, err, "%s: values do not meet the schema of chart %s", where, ch.Name())
		}
	}

	files, err := engine.Engine{}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, failure.New(ReasonTemplateFailed, err, "%s: chart %s", where, ch.Name())
	}
	for name := range files {
		if path.Base(name) == "NOTES.txt" {
			delete(files, name)
		}
	}
	// SortManifests splits the files into documents and sets the hooks
	// apart, exactly as helm install and helm template do; the order it
	// gives does not matter, New sorts the render.
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, failure.New(ReasonManifestInvalid, err, "%s: chart %s", where, ch.Name())
	}

	var objs []*unstructured.Unstructured
	add := func(got []*unstructured.Unstructured) *failure.Error {
		objs = append(objs, got...)
		if req.MaxObjects > 0 && len(objs) > req.MaxObjects {
			return failure.New(ReasonTooManyObjects, nil, "%s: the chart holds more objects than the limit of %d (--max-render-objects)", where, req.MaxObjects)
		}
		return nil
	}
	for _, crd := range ch.CRDObjects() {
		// As helm install reads them (installCRDs), not as helm template
		// --include-crds prints them (followed by a newline): each file as
		// it is, and one that holds no object refused.
		file := fmt.Sprintf("%s: chart file %s", where, crd.Filename)
		got, perr := parseFile(file, crd.File.Data)
		if perr != nil {
			return nil, perr
		}
		if len(got) == 0 {
			return nil, failure.New(ReasonManifestInvalid, nil, "%s holds no object (helm install refuses such a file of crds/)", file)
		}
		if ferr := add(got); ferr != nil {
			return nil, ferr
		}
	}
	for _, m := range manifests {
		got, perr := parseManifest(fmt.Sprintf("%s: chart template %s", where, m.Name), m)
		if perr != nil {
			return nil, perr
		}
		if ferr := add(got); ferr != nil {
			return nil, ferr
		}
	}
	return objs, nil
}

// loadChart loads the chart of req: its archive, else its directory's
// files.
func loadChart(req ChartRequest) (*chart.Chart, error) {
	if req.Chart != nil {
		return loader.LoadArchive(bytes.NewReader(req.Chart))
	}
	names := make([]string, 0, len(req.Files))
	for n := range req.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	files := make([]*archive.BufferedFile, len(names))
	for i, n := range names {
		files[i] = &archive.BufferedFile{Name: n, Data: req.Files[n]}
	}
	return loader.LoadFiles(files)
}

// parseManifest parses one document that Helm rendered as Helm's install
// and template actions do: renderResources writes each document into the
// release manifest as "---\n# Source: NAME\nCONTENT\n", and helm install
// builds its objects from that text with kubectl's stream decoder
// (manifest.ParseFile reads it so). The newline after the content is what
// keeps the last line break of a block scalar ("|", ">") that ends a
// document whose text has none, and the blank lines a "|+" keeps; the
// comment line changes nothing, and is left out. SortManifests has split
// the documents on every line that starts with "---", so the text holds
// one document.
func parseManifest(where string, m releaseutil.Manifest) ([]*unstructured.Unstructured, *failure.Error) {
	return parseFile(where, []byte("---\n"+m.Content+"\n"))
}
