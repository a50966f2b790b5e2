package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputName  = "name"
)

// outputFormats are the formats of -o of the commands on a subresource:
// table and wide (the same, where a table has no wider form) are written by
// the plugin, json, yaml and name by cli-runtime's printers.
var outputFormats = []string{outputTable, outputWide, outputJSON, outputYAML, outputName}

// addOutputFlag adds -o with the default def to cmd, whose answer is a kind.
func addOutputFlag(cmd *cobra.Command, output *string, def, kind, tableHelp string) {
	cmd.Flags().StringVarP(output, "output", "o", def,
		fmt.Sprintf("Output format: table or wide (%s), json, yaml or name (the %s object as the server sent it)", tableHelp, kind))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput rejects an unknown -o.
func checkOutput(output string) error {
	for _, f := range outputFormats {
		if output == f {
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q: use one of %s", output, strings.Join(outputFormats, ", "))
}

// isTable says whether output is written by the plugin as a table.
func isTable(output string) bool { return output == outputTable || output == outputWide }

// printRaw prints raw, an object as the server sent it, as JSON, YAML or
// KIND.GROUP/NAME with the printers of kubectl.
func printRaw(w io.Writer, output string, raw []byte) error {
	var obj runtime.Object = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	switch output {
	case outputYAML:
		p = &printers.YAMLPrinter{}
	case outputName:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return err
		}
		obj, p = u, &printers.NamePrinter{}
	}
	return p.PrintObj(obj, w)
}

// kindGroup writes a kind as kubectl does: Kind.group, or Kind for the core group.
func kindGroup(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// apiVersion joins group and version.
func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// namespaced writes namespace/name, or name for a cluster-scoped object.
func namespaced(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// cell makes s fit in one cell of a table: one line, no terminal escapes.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\t", " ")), " ")
	return printers.EscapeTerminal(s)
}
