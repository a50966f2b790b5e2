// Package installrender renders the two ways to install convoy-apiserver, as
// their own tools do: the kustomize install (artifacts/deploy) with kustomize's
// krusty, as `kubectl kustomize` does, and the Helm chart
// (artifacts/charts/convoy-apiserver) with the Helm v4 SDK, as `helm template`
// does. The unit tests compare the two and keep the chart's golden files; the
// e2e tests send both renders to a kube-apiserver.
package installrender

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The paths of the two installs, relative to the repository root.
const (
	KustomizeDir = "artifacts/deploy"
	ChartDir     = "artifacts/charts/convoy-apiserver"
)

// Namespace is the namespace of the kustomize install, and the one the chart
// is rendered in to compare the two.
const Namespace = "convoy-system"

// ReleaseName is the name of the Helm release of the renders.
const ReleaseName = "convoy"

// Key names an object as the comparisons do: group/Kind namespace/name.
func Key(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return fmt.Sprintf("%s/%s %s/%s", gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName())
}

// Keys returns the keys of objs, sorted.
func Keys(objs []*unstructured.Unstructured) []string {
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, Key(o))
	}
	slices.Sort(keys)
	return keys
}

// Kustomize renders the kustomization directory dir with krusty, as
// `kubectl kustomize dir` does.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	resmap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	out, err := resmap.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return Decode(out)
}

// Chart is a render of a chart.
type Chart struct {
	// Manifest is what `helm template` prints of the templates: the
	// documents, each under its "# Source:" line (the CRDs of crds/ are
	// not in it).
	Manifest string
	// Objects are the objects of Manifest and, when asked for, of crds/.
	Objects []*unstructured.Unstructured
	// Notes is the rendered NOTES.txt.
	Notes string
}

// HelmTemplate renders the chart at dir with values, in namespace, as `helm
// template ReleaseName dir --namespace namespace` does, with Helm's SDK (its
// template engine, Helm's default capabilities, values.schema.json
// enforced); with includeCRDs the CRDs of crds/ are among the objects
// (--include-crds), first.
func HelmTemplate(ctx context.Context, dir string, values map[string]any, namespace string, includeCRDs bool) (*Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return nil, fmt.Errorf("helm template %s: %w", dir, err)
	}
	opts := common.ReleaseOptions{Name: ReleaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, values, opts, common.DefaultCapabilities.Copy(), false)
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w", dir, err)
	}
	files, err := engine.Engine{}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w", dir, err)
	}
	out := &Chart{}
	for name, content := range files {
		if path.Base(name) == "NOTES.txt" {
			out.Notes = content
			delete(files, name)
		}
	}
	// As helm install and helm template do: the documents in Helm's install
	// order, hooks set apart.
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w", dir, err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("helm template %s: the chart has hooks, which it should not", dir)
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	out.Manifest = b.String()
	if includeCRDs {
		for _, f := range ch.CRDObjects() {
			o, err := Decode(f.File.Data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Filename, err)
			}
			out.Objects = append(out.Objects, o...)
		}
	}
	objs, err := Decode([]byte(out.Manifest))
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w", dir, err)
	}
	out.Objects = append(out.Objects, objs...)
	return out, nil
}

// ReadValues reads a values file as `helm template -f` does.
func ReadValues(path string) (map[string]any, error) {
	v, err := common.ReadValuesFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return v, nil
}

// Decode decodes a stream of YAML documents; empty documents are skipped.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding YAML: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// CollapseBlankLines returns a copy of u with every run of line breaks in its
// strings made one. kustomize reads a folded scalar (>-) whose next line is
// more indented with one line break too many ("exists(c,\n\n  (c.type"),
// where the YAML spec, Helm and kubectl -f have one; for the CEL of the rule
// sets that is whitespace between tokens, so the comparisons of renders read
// them without it.
func CollapseBlankLines(u *unstructured.Unstructured) *unstructured.Unstructured {
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			for strings.Contains(v, "\n\n") {
				v = strings.ReplaceAll(v, "\n\n", "\n")
			}
			return v
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		}
		return v
	}
	c := u.DeepCopy()
	walk(c.Object)
	return c
}
