package view

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// previewPage is a Release's /preview: its desired objects as YAML, as the
// API sent them (the values of Secrets already redacted by it).
type previewPage struct {
	layout
	Namespace, Name, ReleaseLink string
	Render                       string
	// Resolved and ValuesResolved name the revisions of the source and of
	// the values source the render was made from (empty: none).
	Resolved, ValuesResolved string
	Objects                  []previewObject
}

type previewObject struct {
	Object, YAML string
}

func newPreviewPage(base, namespace, name string, p *subresourcesv1alpha1.ReleasePreview) (*previewPage, error) {
	page := &previewPage{
		layout:    layout{Title: "Preview of " + namespace + "/" + name, Base: base},
		Namespace: namespace, Name: name, ReleaseLink: base + ReleasePath(namespace, name), Render: p.RenderRef,
	}
	if p.RenderSource != "" {
		page.Render += " (" + string(p.RenderSource) + ")"
	}
	if p.ResolvedSource != nil {
		page.Resolved = describe.Resolved(p.ResolvedSource)
	}
	if p.ResolvedValuesSource != nil {
		page.ValuesResolved = describe.Resolved(p.ResolvedValuesSource)
	}
	for i, raw := range p.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			return nil, fmt.Errorf("object %d of the preview: %w", i, err)
		}
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("object %d of the preview: %w", i, err)
		}
		page.Objects = append(page.Objects, previewObject{Object: convoyv1alpha1.ObjectKeyOf(u).Describe(), YAML: truncate.Display(string(y), maxObject)})
	}
	return page, nil
}
