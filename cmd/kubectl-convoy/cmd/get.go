package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

// overview is what release get shows: the Release, and its /diff and
// /health answers (nil when they could not be had, with the error).
type overview struct {
	release         *convoyv1alpha1.Release
	releaseRaw      *unstructured.Unstructured
	diff            *subresourcesv1alpha1.ReleaseDiff
	diffRaw         []byte
	diffErr         error
	health          *subresourcesv1alpha1.ReleaseHealth
	healthRaw       []byte
	healthErr       error
	namespace, name string
}

func newGetCommand(o *Options) *cobra.Command {
	printFlags := genericclioptions.NewPrintFlags("")
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a Release on one screen: its conditions, and the sync and health of each object",
		Long: `Show a Release on one screen: its source, target and sync policy, the renders
the controller applied, its conditions, and one row per object with its sync status
(from /diff, run now) and its health (from /health, as last assessed), including the
objects the next sync would prune.

-o json, yaml, name, jsonpath=... print a List of the Release, its ReleaseDiff and its
ReleaseHealth.

Needs get on releases (convoy.kumodo.io), releases/diff and releases/health
(subresources.convoy.kumodo.io); what cannot be read is said in place.`,
		Example: `  kubectl convoy release get web -n shop
  kubectl convoy release get web -n shop -o yaml`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := releaseName(cmd, args)
			if err != nil {
				return err
			}
			var objPrinter printers.ResourcePrinter
			if printFlags.OutputFormat != nil && *printFlags.OutputFormat != "" && *printFlags.OutputFormat != outputWide {
				if objPrinter, err = printFlags.ToPrinter(); err != nil {
					return err
				}
			}
			ov, err := o.overview(cmd.Context(), name)
			if err != nil {
				return err
			}
			if objPrinter != nil {
				list, err := ov.list()
				if err != nil {
					return err
				}
				return objPrinter.PrintObj(list, o.Streams.Out)
			}
			return printOverview(o.Streams.Out, ov, o.Now())
		},
	}
	printFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: one of cli-runtime's (json, yaml, name, jsonpath=..., go-template=...); the default is the overview"
	return cmd
}

// overview reads the Release, then its /diff and /health.
func (o *Options) overview(ctx context.Context, name string) (*overview, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	u, err := c.dynamic.Resource(releasesGVR).Namespace(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading release %s/%s: %w", c.namespace, name, err)
	}
	ov := &overview{releaseRaw: u, release: &convoyv1alpha1.Release{}, namespace: c.namespace, name: name}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ov.release); err != nil {
		return nil, fmt.Errorf("decoding release %s/%s: %w", c.namespace, name, err)
	}
	var diff subresourcesv1alpha1.ReleaseDiff
	if ov.diffRaw, ov.diffErr = c.do(ctx, request{verb: "get", subresource: "diff", namespace: c.namespace, name: name}, nil, &diff); ov.diffErr == nil {
		ov.diff = &diff
	}
	var health subresourcesv1alpha1.ReleaseHealth
	if ov.healthRaw, ov.healthErr = c.do(ctx, request{verb: "get", subresource: "health", namespace: c.namespace, name: name}, nil, &health); ov.healthErr == nil {
		ov.health = &health
	}
	return ov, nil
}

// list is the Release, its ReleaseDiff and its ReleaseHealth as a List (the
// two last when they could be read).
func (ov *overview) list() (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	list.Items = append(list.Items, *ov.releaseRaw)
	for _, raw := range [][]byte{ov.diffRaw, ov.healthRaw} {
		if raw == nil {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(raw, &u.Object); err != nil {
			return nil, err
		}
		list.Items = append(list.Items, *u)
	}
	return list, nil
}

// objectRow is one object of the overview.
type objectRow struct {
	key          convoyv1alpha1.ObjectKey
	sync, health string
	changedBy    string
	message      string
}

// rows merges the objects of the diff (in render order), the entries of the
// health that the render does not hold (hooks, older renders) and the extra
// objects.
func (ov *overview) rows() []objectRow {
	var rows []objectRow
	index := map[convoyv1alpha1.ObjectKey]int{}
	add := func(key convoyv1alpha1.ObjectKey) *objectRow {
		if i, ok := index[key]; ok {
			return &rows[i]
		}
		index[key] = len(rows)
		rows = append(rows, objectRow{key: key, sync: "-", health: "-", changedBy: "-"})
		return &rows[len(rows)-1]
	}
	if ov.diff != nil {
		for _, o := range ov.diff.Objects {
			r := add(o.Key())
			r.sync = string(o.Status)
			if len(o.Changes) > 0 {
				paths := make([]string, 0, len(o.Changes))
				for _, ch := range o.Changes {
					paths = append(paths, ch.Path)
				}
				r.message = "changed: " + strings.Join(paths, ", ")
			}
			if len(o.ChangedBy) > 0 {
				r.changedBy = strings.Join(o.ChangedBy, ", ")
			}
		}
		for _, e := range ov.diff.ExtraObjects {
			r := add(e.ObjectKey)
			r.sync = "Extra"
			r.message = "not in the render: the next sync prunes it"
			if e.Message != "" {
				r.message = "not in the render; " + e.Message
			}
		}
	}
	if ov.health != nil {
		for _, e := range ov.health.Entries {
			r := add(e.ObjectKey)
			r.health = string(e.State)
			if e.HookPhase != "" {
				r.health += " (hook " + string(e.HookPhase) + ")"
			}
			if e.Message != "" && r.message == "" {
				r.message = e.Message
			}
		}
	}
	return rows
}

// printOverview writes ov as a screen like argocd app get.
func printOverview(w io.Writer, ov *overview, now time.Time) error {
	r := ov.release
	tw := printers.GetNewTabWriter(w)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, cell(value)) }
	field("Name", r.Name)
	field("Namespace", r.Namespace)
	field("Source", describe.Source(r))
	target := "the local cluster"
	if r.Spec.Cluster != nil {
		target = "Cluster " + r.Spec.Cluster.Name
	}
	if r.Spec.TargetNamespace != "" {
		target += ", namespace " + r.Spec.TargetNamespace
	}
	field("Target", target)
	identity := r.Spec.ServiceAccountName
	if identity == "" {
		identity = "(the default)"
	}
	field("Service account", identity)
	policy := "manual"
	if r.Spec.SyncPolicy.Automatic != nil {
		policy = "automatic"
	}
	if r.Spec.SyncPolicy.Interval != nil {
		policy += ", checked every " + r.Spec.SyncPolicy.Interval.Duration.String()
	}
	field("Sync policy", policy)
	if r.Spec.Pin != nil {
		field("Pinned to", r.Spec.Pin.RenderRef)
	}
	if ov.diff != nil && ov.diff.ResolvedSource != nil {
		field("Resolved source", describe.Resolved(ov.diff.ResolvedSource))
	}
	if ov.diff != nil && ov.diff.ResolvedValuesSource != nil {
		field("Values source", describe.Resolved(ov.diff.ResolvedValuesSource))
	}
	if lr := r.Status.LastResolved; lr != nil {
		field("Last resolved", describe.LastResolved(lr))
	}
	if lr := r.Status.LastResolvedValuesSource; lr != nil {
		field("Last resolved values", describe.LastResolved(lr))
	}
	if h := r.Status.LastHandledRefreshAt; h != "" {
		field("Last refresh", "requested at "+h+", handled")
	}
	if ov.diff != nil && ov.diff.RenderRef != "" {
		field("Desired render", fmt.Sprintf("%s (%s)", ov.diff.RenderRef, ov.diff.RenderSource))
	}
	for _, rec := range []struct {
		name string
		r    *convoyv1alpha1.RenderRecord
	}{{"Last applied", r.Status.LastApplied}, {"Last healthy", r.Status.LastHealthy}} {
		if rec.r != nil {
			field(rec.name, fmt.Sprintf("%s, %s ago", rec.r.RenderRef, duration.HumanDuration(now.Sub(rec.r.Time.Time))))
		}
	}
	if r.Status.Rollout != nil {
		field("Rollout", fmt.Sprintf("%s (wave %d)", r.Status.Rollout.Phase, r.Status.Rollout.Wave))
	}
	field("Age", duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)))
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, c := range r.Status.Conditions {
		status := string(c.Status)
		if c.ObservedGeneration != r.Generation {
			status += " (older spec)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(c.Type), cell(status), cell(c.Reason),
			duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), cell(c.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	rows := ov.rows()
	if len(rows) > 0 {
		tw = printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tSYNC\tHEALTH\tCHANGED-BY\tMESSAGE")
		for _, row := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(kindGroup(row.key.Group, row.key.Kind)), cell(row.key.Namespace),
				cell(row.key.Name), cell(row.sync), cell(row.health), cell(row.changedBy), cell(row.message))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if ov.diff != nil && ov.diff.Result == subresourcesv1alpha1.DiffUndetermined {
		fmt.Fprintf(w, "Sync: Undetermined (%s): %s\n", cell(ov.diff.Reason), cell(ov.diff.Message))
	}
	for _, e := range []struct {
		what string
		err  error
	}{{"the diff", ov.diffErr}, {"the health", ov.healthErr}} {
		if e.err != nil {
			fmt.Fprintf(w, "Could not read %s: %s\n", e.what, cell(e.err.Error()))
		}
	}
	return nil
}
