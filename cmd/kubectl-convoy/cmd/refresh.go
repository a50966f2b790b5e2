package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

func newRefreshCommand(o *Options) *cobra.Command {
	var (
		output  string
		waitFor bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "refresh NAME [--wait [--timeout=2m]]",
		Short: "Resolve a Release's source again now",
		Long: `Ask convoy-apiserver to resolve a Release's source again now (a new commit of its
branch, a tag moved, a new chart version), whatever --source-resolve-max-age: the
time is recorded in the annotation convoy.kumodo.io/refresh-requested-at of the
Release, with an Event that names you, and the drift loop's next pass (a second
later) reads the registry or repository again and compares.

With --wait, it waits until status.lastHandledRefreshAt shows the request was
handled, then prints what the source resolved to and the InSync condition. Exit
status: 0 when handled; 1 on timeout; 2 on any other error.

Needs create on releases/refresh in subresources.convoy.kumodo.io (and get on
releases in convoy.kumodo.io for --wait).`,
		Example: `  kubectl convoy release refresh web -n shop
  git push && kubectl convoy release refresh web -n shop --wait && kubectl convoy release diff web -n shop`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var refresh subresourcesv1alpha1.ReleaseRefresh
			namespace, name, raw, err := o.callRelease(cmd, args, output, request{verb: "create", subresource: "refresh"}, []byte("{}"), &refresh)
			if err != nil {
				if waitFor {
					return &ExitError{Code: exitWaitError, Err: err}
				}
				return err
			}
			if !isTable(output) {
				if err := printRaw(o.Streams.Out, output, raw); err != nil {
					return err
				}
			} else if err := printRefresh(o.Streams.Out, &refresh, namespace, name); err != nil {
				return err
			}
			if !waitFor {
				return nil
			}
			if refresh.RequestedAt == nil {
				return &ExitError{Code: exitWaitError, Err: errors.New("the answer holds no requestedAt to wait for")}
			}
			code, err := o.waitRefreshed(cmd, name, refresh.RequestedAt.Time, time.Now(), timeout)
			if err != nil || code != exitReached {
				return &ExitError{Code: code, Err: err}
			}
			return nil
		},
	}
	addOutputFlag(cmd, &output, outputTable, "ReleaseRefresh", "one line")
	cmd.Flags().BoolVar(&waitFor, "wait", false, "Wait until the drift loop handled the request, and print what the source resolved to")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "How long --wait waits")
	return cmd
}

// printRefresh writes the line of a refresh request.
func printRefresh(w io.Writer, s *subresourcesv1alpha1.ReleaseRefresh, namespace, name string) error {
	return printRequest(w, "refresh", s.ObjectMeta, s.RequestedAt, namespace, name)
}

// waitRefreshed polls the Release until status.lastHandledRefreshAt shows
// that the request recorded at requestedAt (the server's time, answered at
// answered by this machine's clock) was handled (see refreshHandled), then
// prints what it resolved to.
func (o *Options) waitRefreshed(cmd *cobra.Command, name string, requestedAt, answered time.Time, timeout time.Duration) (int, error) {
	releases, namespace, err := o.releaseResource(false)
	if err != nil {
		return exitWaitError, err
	}
	var last *convoyv1alpha1.Release
	_, err = pollRelease(cmd.Context(), releases, name, timeout, func(r *convoyv1alpha1.Release) bool {
		last = r
		// The server's clock now, as far as this one can tell.
		return refreshHandled(r.Status.LastHandledRefreshAt, requestedAt, requestedAt.Add(time.Since(answered)))
	})
	switch {
	case err == nil:
	case errors.Is(err, errTimedOut):
		return exitNotReached, fmt.Errorf("timed out after %s waiting for the refresh of release %s/%s to be handled (is convoy-apiserver's drift loop running?)", timeout, namespace, name)
	default:
		return exitWaitError, fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	return exitReached, printRefreshed(o.Streams.Out, last)
}

// printRefreshed writes what the pass that handled a refresh of r resolved
// its source and values source to, and its InSync condition, terminal
// control characters escaped.
func printRefreshed(w io.Writer, r *convoyv1alpha1.Release) error {
	var b strings.Builder
	fmt.Fprintf(&b, "handled: %s\n", r.Status.LastHandledRefreshAt)
	if lr := r.Status.LastResolved; lr != nil {
		fmt.Fprintf(&b, "resolved: %s\n", describe.LastResolved(lr))
	}
	if lr := r.Status.LastResolvedValuesSource; lr != nil {
		fmt.Fprintf(&b, "values resolved: %s\n", describe.LastResolved(lr))
	}
	if c := findCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync); c != nil {
		fmt.Fprintf(&b, "InSync: %s (%s): %s\n", c.Status, c.Reason, c.Message)
	}
	_, err := io.WriteString(w, printers.EscapeTerminal(b.String()))
	return err
}

// refreshHandled says whether handled, status.lastHandledRefreshAt, shows
// that the refresh request recorded at requested was handled: it is that
// request's own value, or the time of a later request that a pass handled
// after it. A time further ahead of serverNow than RefreshSkew was not
// written by a pass that saw this request (an earlier version of the
// observer copied any annotation there, 9999-12-31 included): it is no
// answer.
func refreshHandled(handled string, requested, serverNow time.Time) bool {
	if handled == requested.UTC().Format(metav1.RFC3339Micro) {
		return true
	}
	t, err := time.Parse(time.RFC3339Nano, handled)
	return err == nil && !t.Before(requested) && !t.After(serverNow.Add(convoyv1alpha1.RefreshSkew))
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
