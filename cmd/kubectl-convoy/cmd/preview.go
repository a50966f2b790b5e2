package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func newPreviewCommand(o *Options) *cobra.Command {
	var output, render string
	cmd := &cobra.Command{
		Use:   "preview NAME [--render REF]",
		Short: "Show the desired render of a Release",
		Long: `Show the desired render of a Release (or the stored render REF): by default as a
multi-document YAML stream of its objects, with the renderRef and renderSource in
a leading comment. Secret values are redacted.

-o yaml (the default) prints that stream, -o json the ReleasePreview object as the
server sent it, -o table one row per object.

Needs get on releases/preview in subresources.convoy.kumodo.io.`,
		Example: `  kubectl convoy release preview web -n shop
  kubectl convoy release preview web -n shop --render 0123456789abcdef
  kubectl convoy release preview web -n shop -o table`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var preview subresourcesv1alpha1.ReleasePreview
			_, _, raw, err := o.callRelease(cmd, args, output, request{verb: "get", subresource: "preview", render: render}, nil, &preview)
			if err != nil {
				return err
			}
			switch output {
			case outputYAML:
				return printPreviewStream(o.Streams.Out, &preview)
			case outputTable:
				return printPreviewTable(o.Streams.Out, &preview)
			default:
				return printRaw(o.Streams.Out, output, raw)
			}
		},
	}
	addOutputFlag(cmd, &output, outputYAML, "ReleasePreview", "one row per object")
	cmd.Flags().Lookup("output").Usage = "Output format: yaml (the objects as a multi-document YAML stream), json (the ReleasePreview object as the server sent it) or table (one row per object)"
	cmd.Flags().StringVar(&render, "render", "", "renderRef of a stored render to show instead of the desired render")
	return cmd
}

// printPreviewStream writes the objects of p as a multi-document YAML
// stream, after a comment that names the render.
func printPreviewStream(w io.Writer, p *subresourcesv1alpha1.ReleasePreview) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Release %s/%s: %d objects\n", p.Namespace, p.Name, len(p.Objects))
	fmt.Fprintf(&b, "# renderRef: %s\n", p.RenderRef)
	fmt.Fprintf(&b, "# renderSource: %s\n", p.RenderSource)
	for i, obj := range p.Objects {
		y, err := yaml.JSONToYAML(obj.Raw)
		if err != nil {
			return fmt.Errorf("object %d of the render: %w", i, err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printPreviewTable writes one row per object of p, then the render.
func printPreviewTable(w io.Writer, p *subresourcesv1alpha1.ReleasePreview) error {
	if len(p.Objects) > 0 {
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME")
		for i, obj := range p.Objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(obj.Raw); err != nil {
				return fmt.Errorf("object %d of the render: %w", i, err)
			}
			gvk := u.GroupVersionKind()
			fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(kindGroup(gvk.Group, gvk.Kind)), cell(u.GetNamespace()), cell(u.GetName()))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "Release %s/%s: render %s (%s), %d objects\n", p.Namespace, p.Name, p.RenderRef, p.RenderSource, len(p.Objects))
	return err
}
