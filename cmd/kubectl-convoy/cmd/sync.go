package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func newSyncCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "sync NAME",
		Short: "Ask convoy's controller to sync a Release now",
		Long: `Ask convoy's controller to sync a Release now: convoy-apiserver records the time in
the annotation convoy.kumodo.io/sync-requested-at of the Release and an Event.

Needs create on releases/sync in subresources.convoy.kumodo.io.`,
		Example:           `  kubectl convoy release sync web -n shop`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sync subresourcesv1alpha1.ReleaseSync
			namespace, name, raw, err := o.callRelease(cmd, args, output, request{verb: "create", subresource: "sync"}, []byte("{}"), &sync)
			if err != nil {
				return err
			}
			if !isTable(output) {
				return printRaw(o.Streams.Out, output, raw)
			}
			return printSync(o.Streams.Out, &sync, namespace, name)
		},
	}
	addOutputFlag(cmd, &output, outputTable, "ReleaseSync", "one line")
	return cmd
}

// printSync writes the line of a sync request.
func printSync(w io.Writer, s *subresourcesv1alpha1.ReleaseSync, namespace, name string) error {
	return printRequest(w, "sync", s.ObjectMeta, s.RequestedAt, namespace, name)
}

// printRequest writes the line of a request (sync, refresh) of the answer
// meta, or of namespace/name when the answer does not name its Release.
func printRequest(w io.Writer, what string, meta metav1.ObjectMeta, requestedAt *metav1.MicroTime, namespace, name string) error {
	if meta.Namespace != "" {
		namespace = meta.Namespace
	}
	if meta.Name != "" {
		name = meta.Name
	}
	at := "an unknown time"
	if requestedAt != nil {
		at = requestedAt.UTC().Format(metav1.RFC3339Micro)
	}
	_, err := fmt.Fprintf(w, "%s requested for release %s/%s at %s\n", what, namespace, name, at)
	return err
}
