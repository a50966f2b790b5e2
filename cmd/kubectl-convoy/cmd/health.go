package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func newHealthCommand(o *Options) *cobra.Command {
	var output string
	var exitCode bool
	cmd := &cobra.Command{
		Use:   "health NAME",
		Short: "Show the health of a Release and of each object it applied",
		Long: `Show the health of a Release as convoy-apiserver last assessed it: one row per
inventory entry with its state, how long it has been unhealthy, the render it was
assessed at and the message of the first failing rule, then the Healthy condition
and the healthSummary.

With --exit-code the exit status tells the health: 0 when the Healthy condition is
True, 1 when it is not (Progressing, Degraded, Unknown, ...), 2 on an error.

Needs get on releases/health in subresources.convoy.kumodo.io.`,
		Example: `  kubectl convoy release health web -n shop
  kubectl convoy release health web -n shop -o yaml
  kubectl convoy release health web -n shop --exit-code >/dev/null || echo unhealthy`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var health subresourcesv1alpha1.ReleaseHealth
			namespace, name, raw, err := o.callRelease(cmd, args, output, request{verb: "get", subresource: "health"}, nil, &health)
			if err != nil {
				if exitCode {
					return &ExitError{Code: exitWaitError, Err: err}
				}
				return err
			}
			if !isTable(output) {
				err = printRaw(o.Streams.Out, output, raw)
			} else {
				if len(health.Entries) == 0 {
					fmt.Fprintf(o.Streams.ErrOut, "No inventory entries: release %s/%s has not been applied yet.\n", namespace, name)
				}
				err = printHealth(o.Streams.Out, &health, o.Now())
			}
			switch {
			case err != nil && exitCode:
				return &ExitError{Code: exitWaitError, Err: err}
			case err != nil:
				return err
			case exitCode && (health.Healthy == nil || health.Healthy.Status != metav1.ConditionTrue):
				return &ExitError{Code: exitNotReached}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&exitCode, "exit-code", false, "Exit 0 when Healthy is True, 1 when not, 2 on an error")
	addOutputFlag(cmd, &output, outputTable, "ReleaseHealth", "the inventory entries and the Healthy condition")
	return cmd
}

// printHealth writes the entries of h as a table, then the summary line.
func printHealth(w io.Writer, h *subresourcesv1alpha1.ReleaseHealth, now time.Time) error {
	if len(h.Entries) > 0 {
		hooks := false
		for _, e := range h.Entries {
			hooks = hooks || e.HookPhase != ""
		}
		tw := printers.GetNewTabWriter(w)
		columns := []string{"KIND", "NAMESPACE", "NAME", "STATE", "AGE", "ASSESSED"}
		if hooks {
			columns = append(columns, "HOOK")
		}
		columns = append(columns, "MESSAGE")
		fmt.Fprintln(tw, strings.Join(columns, "\t"))
		for _, e := range h.Entries {
			row := []string{
				cell(kindGroup(e.Group, e.Kind)), cell(e.Namespace), cell(e.Name), cell(string(e.State)),
				unhealthyAge(e, now), cell(assessed(e)),
			}
			if hooks {
				row = append(row, cell(string(e.HookPhase)))
			}
			row = append(row, cell(e.Message))
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, healthSummary(h))
	return err
}

// unhealthyAge is how long e has been unhealthy, or "-".
func unhealthyAge(e subresourcesv1alpha1.EntryHealth, now time.Time) string {
	if e.FirstUnhealthy == nil || e.FirstUnhealthy.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(e.FirstUnhealthy.Time))
}

// assessed is the render e was assessed at, and the render applied when
// that is another one.
func assessed(e subresourcesv1alpha1.EntryHealth) string {
	ref := e.AssessedRenderRef
	if ref == "" {
		ref = "-"
	}
	if e.RenderRef != "" && e.RenderRef != e.AssessedRenderRef {
		return fmt.Sprintf("%s (applied: %s)", ref, e.RenderRef)
	}
	return ref
}

// healthSummary is the line under the table: the Healthy condition and the
// counts, e.g. "Healthy: False (Progressing) 2 of 3 healthy: ...".
func healthSummary(h *subresourcesv1alpha1.ReleaseHealth) string {
	c := h.Healthy
	if c == nil {
		return "Healthy: Unknown (not assessed yet)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Healthy: %s", c.Status)
	if c.Reason != "" {
		fmt.Fprintf(&b, " (%s)", c.Reason)
	}
	message := strings.TrimSpace(c.Message)
	if s := h.HealthSummary; s != nil && s.Total > 0 {
		fmt.Fprintf(&b, " %d of %d healthy", s.Healthy, s.Total)
		// The condition's message starts with the same counts; say them once.
		counts := fmt.Sprintf("%d of %d resources healthy", s.Healthy, s.Total)
		if message == counts {
			message = ""
		} else if rest, ok := strings.CutPrefix(message, counts+"; "); ok {
			message = rest
		}
	}
	if message != "" {
		fmt.Fprintf(&b, ": %s", printers.EscapeTerminal(message))
	}
	return b.String()
}
