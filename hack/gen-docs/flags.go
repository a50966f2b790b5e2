package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kumodo/convoy-apiserver/cmd/convoy-apiserver/app"
	plugin "github.com/kumodo/convoy-apiserver/cmd/kubectl-convoy/cmd"
)

// FlagsPage returns flags.md: the flags of convoy-apiserver by named set,
// then those of kubectl-convoy: the global ones once, then each command's
// own. Their defaults are read in the environment of the caller (see
// stableEnv).
func FlagsPage() string {
	b := page("Flags",
		"The flags of convoy-apiserver and of the kubectl plugin kubectl-convoy, with the defaults the code gives them.",
		"A default under `$HOME` is in the home directory of the user who runs the program.",
		"Every command also takes `-h, --help`.")

	b.WriteString("## convoy-apiserver\n\n")
	fss := app.NewOptions().Flags()
	for _, name := range fss.Order {
		b.WriteString("### " + name + "\n\n")
		flagTable(b, fss.FlagSets[name])
	}

	b.WriteString("## kubectl-convoy plugin\n\n")
	root := plugin.NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	// The completion command that cobra adds when the plugin runs.
	root.InitDefaultCompletionCmd()
	for _, c := range commands(root) {
		b.WriteString("### " + c.CommandPath() + "\n\n")
		if c == root {
			b.WriteString("The global flags: every command takes them.\n\n")
		} else if c.Short != "" {
			b.WriteString(strings.TrimSuffix(c.Short, ".") + ".\n\n")
		}
		if !hasFlags(c.LocalFlags()) {
			b.WriteString("No flags of its own.\n\n")
			continue
		}
		flagTable(b, c.LocalFlags())
	}
	return b.String()
}

// commands returns c and its subcommands, depth first in cobra's order (by
// name), without help and hidden commands.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		out = append(out, commands(sub)...)
	}
	return out
}

// hasFlags reports whether fs has a flag other than help.
func hasFlags(fs *pflag.FlagSet) bool {
	has := false
	fs.VisitAll(func(f *pflag.Flag) { has = has || f.Name != "help" })
	return has
}

// flagTable writes the flags of fs, by name, but help.
func flagTable(b *strings.Builder, fs *pflag.FlagSet) {
	var rows [][]string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		usage := f.Usage
		if f.Deprecated != "" {
			usage += " (DEPRECATED: " + f.Deprecated + ")"
		}
		if f.Hidden {
			usage += " (hidden)"
		}
		rows = append(rows, []string{code(name), f.Value.Type(), code(defaultOf(f)), cell(usage)})
	})
	table(b, []string{"flag", "type", "default", "description"}, rows)
}

// defaultOf is the default of f as the help text shows it: nothing for an
// empty string or list.
func defaultOf(f *pflag.Flag) string {
	switch f.DefValue {
	case "[]", `""`:
		return ""
	}
	return f.DefValue
}
