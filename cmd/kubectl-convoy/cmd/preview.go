package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

func newPreviewCommand(o *Options) *cobra.Command {
	var output, render, revision string
	var manifests bool
	cmd := &cobra.Command{
		Use:   "preview NAME [--render REF | --revision REV]",
		Short: "Show the desired render of a Release",
		Long: `Show the desired render of a Release (or the stored render REF, or a render of
its source at the revision REV): by default one row per object, then the render.
Secret values are redacted.

--manifests prints the objects as a multi-document YAML stream, with the renderRef
and renderSource in a leading comment (ready for kubectl apply); -o json, yaml and
name print the ReleasePreview object as the server sent it.

Needs get on releases/preview in subresources.convoy.kumodo.io.`,
		Example: `  kubectl convoy release preview web -n shop
  kubectl convoy release preview web -n shop --render 0123456789abcdef
  kubectl convoy release preview web -n shop --revision v1.4.0
  kubectl convoy release preview web -n shop --manifests | kubectl apply --server-side --dry-run=server -f -`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if manifests && cmd.Flags().Changed("output") {
				return errors.New("--manifests and -o cannot be used together")
			}
			req := request{verb: "get", subresource: "preview", render: render, revision: revision}
			if err := checkRenderOptions(req); err != nil {
				return err
			}
			var preview subresourcesv1alpha1.ReleasePreview
			_, _, raw, err := o.callRelease(cmd, args, output, req, nil, &preview)
			if err != nil {
				return err
			}
			switch {
			case manifests:
				return printPreviewStream(o.Streams.Out, &preview)
			case isTable(output):
				return printPreviewTable(o.Streams.Out, &preview)
			default:
				return printRaw(o.Streams.Out, output, raw)
			}
		},
	}
	addOutputFlag(cmd, &output, outputTable, "ReleasePreview", "one row per object")
	cmd.Flags().BoolVar(&manifests, "manifests", false, "Print the objects of the render as a multi-document YAML stream")
	cmd.Flags().StringVar(&render, "render", "", "renderRef of a stored render to show instead of the desired render")
	addRevisionFlag(cmd, &revision, "show")
	return cmd
}

// printPreviewStream writes the objects of p as a multi-document YAML
// stream, after a comment that names the render, the source it was
// resolved to and the values source it read values files from (each with
// the signature it was verified with).
func printPreviewStream(w io.Writer, p *subresourcesv1alpha1.ReleasePreview) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Release %s/%s: %d objects\n", p.Namespace, p.Name, len(p.Objects))
	fmt.Fprintf(&b, "# renderRef: %s\n", p.RenderRef)
	fmt.Fprintf(&b, "# renderSource: %s\n", p.RenderSource)
	if p.ResolvedSource != nil {
		fmt.Fprintf(&b, "# resolvedSource: %s\n", printers.EscapeTerminal(describe.Resolved(p.ResolvedSource)))
	}
	if p.ResolvedValuesSource != nil {
		fmt.Fprintf(&b, "# resolvedValuesSource: %s\n", printers.EscapeTerminal(describe.Resolved(p.ResolvedValuesSource)))
	}
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

// printPreviewTable writes one row per object of p, then the render, the
// source it was resolved to and the values source it read values files from
// (each with the signature it was verified with).
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
	if _, err := fmt.Fprintf(w, "Release %s/%s: render %s (%s), %d objects\n", p.Namespace, p.Name, p.RenderRef, p.RenderSource, len(p.Objects)); err != nil {
		return err
	}
	if p.ResolvedSource != nil {
		if _, err := fmt.Fprintf(w, "Resolved source: %s\n", printers.EscapeTerminal(describe.Resolved(p.ResolvedSource))); err != nil {
			return err
		}
	}
	if p.ResolvedValuesSource != nil {
		_, err := fmt.Fprintf(w, "Values source: %s\n", printers.EscapeTerminal(describe.Resolved(p.ResolvedValuesSource)))
		return err
	}
	return nil
}
