// Package cmd holds the commands of the kubectl-convoy plugin: `kubectl convoy
// release health|diff|preview|sync NAME`, on the subresources that
// convoy-apiserver serves in the group subresources.convoy.kumodo.io.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Options are what every command shares: the kubeconfig flags, the streams
// and the clock.
type Options struct {
	Flags   *genericclioptions.ConfigFlags
	Streams genericiooptions.IOStreams
	// Now is the clock of the AGE column.
	Now func() time.Time
	// isTerminal says whether a writer is a terminal that takes colour; it
	// decides --color=auto.
	isTerminal func(io.Writer) bool
}

// NewOptions returns the Options of a plugin that writes to streams.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		Flags:      genericclioptions.NewConfigFlags(true),
		Streams:    streams,
		Now:        time.Now,
		isTerminal: allowsColor,
	}
}

// NewCommand returns the root command, kubectl-convoy.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return NewCommandWithOptions(NewOptions(streams))
}

// NewCommandWithOptions returns the root command with o.
func NewCommandWithOptions(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-convoy",
		Short: "Ask convoy-apiserver about Releases: health, diff, preview and sync",
		Long: `kubectl convoy talks to convoy-apiserver, the aggregated API server of the group
subresources.convoy.kumodo.io, about the Releases of convoy.kumodo.io.

Install the binary kubectl-convoy on your PATH and call it as "kubectl convoy".`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl convoy",
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(o.Streams.In)
	root.SetOut(o.Streams.Out)
	root.SetErr(o.Streams.ErrOut)
	o.Flags.AddFlags(root.PersistentFlags())
	registerFlagCompletion(root, o)

	release := &cobra.Command{
		Use:     "release",
		Aliases: []string{"releases", "rel"},
		Short:   "Health, diff, preview and sync of a Release",
	}
	release.AddCommand(
		newListCommand(o),
		newGetCommand(o),
		newHealthCommand(o),
		newDiffCommand(o),
		newPreviewCommand(o),
		newSyncCommand(o),
		newRefreshCommand(o),
		newWaitCommand(o),
	)
	root.AddCommand(release, newRevisionDiffCommand(o), newRulesCommand(o), newViewCommand(o), newVersionCommand(o))
	return root
}

// Execute runs root, prints its error kubectl-style and returns the exit
// code: the code of an *ExitError, 1 for other errors, 0 without one.
func Execute(ctx context.Context, root *cobra.Command, errOut io.Writer) int {
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var exit *ExitError
	if errors.As(err, &exit) {
		code = exit.Code
		err = exit.Err
	}
	if err != nil {
		// kubectl's errors begin with "error: " already.
		fmt.Fprintln(errOut, "error: "+strings.TrimPrefix(err.Error(), "error: "))
	}
	return code
}

// ExitError ends the plugin with Code. Err, when set, is printed to stderr.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// releaseName checks the one argument of a release command.
func releaseName(cmd *cobra.Command, args []string) (string, error) {
	switch len(args) {
	case 1:
		if args[0] == "" {
			break
		}
		return args[0], nil
	case 0:
	default:
		return "", fmt.Errorf("one release name expected, got %d arguments: %s\nSee '%s --help' for usage", len(args), strings.Join(args, " "), cmd.CommandPath())
	}
	return "", fmt.Errorf("a release name is required\nSee '%s --help' for usage", cmd.CommandPath())
}
