package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

// Output formats of the table printers, next to those of cli-runtime's
// print flags (json, yaml, name, jsonpath, go-template, ...).
const outputWide = "wide"

// listOptions are the flags of release list.
type listOptions struct {
	allNamespaces bool
	selector      string
	watch         bool
	print         *genericclioptions.PrintFlags
}

func newListCommand(o *Options) *cobra.Command {
	l := &listOptions{print: genericclioptions.NewPrintFlags("")}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List Releases with their InSync and Healthy conditions",
		Long: `List the Releases of a namespace (or of all with -A): whether they are in sync
and healthy, the render the controller last applied, and their age. -o wide adds the
reasons and the message of the first condition that is not True; -o json, yaml, name,
jsonpath=... print the Releases as kubectl get does; -w keeps printing each change.

Needs list (and watch, for -w) on releases in convoy.kumodo.io.`,
		Example: `  kubectl convoy release list -A
  kubectl convoy release list -n shop -l team=web -o wide
  kubectl convoy release list -A -w`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.runList(cmd.Context(), l)
		},
	}
	cmd.Flags().BoolVarP(&l.allNamespaces, "all-namespaces", "A", false, "List the Releases of every namespace")
	cmd.Flags().StringVarP(&l.selector, "selector", "l", "", "Label selector (e.g. team=web)")
	cmd.Flags().BoolVarP(&l.watch, "watch", "w", false, "After listing, print each change of a Release")
	l.print.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: wide, or one of cli-runtime's (json, yaml, name, jsonpath=..., go-template=...); the default is a table"
	return cmd
}

// releaseResource returns the dynamic client of Releases in the namespace of
// the flags, or of every namespace.
func (o *Options) releaseResource(all bool) (dynamic.ResourceInterface, string, error) {
	c, err := o.client()
	if err != nil {
		return nil, "", err
	}
	if all {
		return c.releases(true), "", nil
	}
	return c.releases(false), c.namespace, nil
}

// releases is the dynamic client of Releases in the namespace of c, or of
// every namespace.
func (c *client) releases(all bool) dynamic.ResourceInterface {
	if all {
		return c.dynamic.Resource(releasesGVR)
	}
	return c.dynamic.Resource(releasesGVR).Namespace(c.namespace)
}

func (o *Options) runList(ctx context.Context, l *listOptions) error {
	format := ""
	if l.print.OutputFormat != nil {
		format = *l.print.OutputFormat
	}
	var objPrinter printers.ResourcePrinter
	if format != "" && format != outputWide {
		p, err := l.print.ToPrinter()
		if err != nil {
			return err
		}
		objPrinter = p
	}
	releases, namespace, err := o.releaseResource(l.allNamespaces)
	if err != nil {
		return err
	}
	list, err := releases.List(ctx, metav1.ListOptions{LabelSelector: l.selector})
	if err != nil {
		return fmt.Errorf("listing releases: %w", err)
	}
	table := &releaseTable{w: printers.GetNewTabWriter(o.Streams.Out), allNamespaces: l.allNamespaces, wide: format == outputWide, now: o.Now}
	if objPrinter != nil && !l.watch {
		return objPrinter.PrintObj(list, o.Streams.Out)
	}
	if objPrinter != nil {
		for i := range list.Items {
			if err := objPrinter.PrintObj(&list.Items[i], o.Streams.Out); err != nil {
				return err
			}
		}
	} else {
		if len(list.Items) == 0 && !l.watch {
			where := "namespace " + namespace
			if l.allNamespaces {
				where = "any namespace"
			}
			fmt.Fprintf(o.Streams.ErrOut, "No releases found in %s.\n", where)
			return nil
		}
		if err := table.header(); err != nil {
			return err
		}
		for i := range list.Items {
			if err := table.row(&list.Items[i]); err != nil {
				return err
			}
		}
		if err := table.w.Flush(); err != nil {
			return err
		}
	}
	if !l.watch {
		return nil
	}
	// From the list's resourceVersion on; a watch that ends (timeout, a
	// restart of the API server) is resumed.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.LabelSelector = l.selector
			return releases.Watch(ctx, options)
		},
	})
	if err != nil {
		return fmt.Errorf("watching releases: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watching releases: %v", ev.Object)
			}
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU || ev.Type == watch.Bookmark {
				continue
			}
			if objPrinter != nil {
				err = objPrinter.PrintObj(u, o.Streams.Out)
			} else {
				err = table.row(u)
				if err == nil {
					err = table.w.Flush()
				}
			}
			if err != nil {
				return err
			}
		}
	}
}

// flushWriter is a tab writer.
type flushWriter interface {
	io.Writer
	Flush() error
}

// releaseTable prints Releases as rows.
type releaseTable struct {
	w             flushWriter
	allNamespaces bool
	wide          bool
	now           func() time.Time
}

func (t *releaseTable) header() error {
	cols := "NAME\tINSYNC\tHEALTHY\tRENDER\tAGE"
	if t.allNamespaces {
		cols = "NAMESPACE\t" + cols
	}
	if t.wide {
		cols += "\tSYNC-REASON\tHEALTH-REASON\tREVISION\tMESSAGE"
	}
	_, err := fmt.Fprintln(t.w, cols)
	return err
}

func (t *releaseTable) row(u *unstructured.Unstructured) error {
	var r convoyv1alpha1.Release
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return fmt.Errorf("decoding release %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	row := releaseRow(&r, t.now())
	if !t.allNamespaces {
		row = row[1:]
	}
	if !t.wide {
		row = row[:len(row)-4]
	}
	for i, c := range row {
		sep := "\t"
		if i == len(row)-1 {
			sep = "\n"
		}
		if _, err := fmt.Fprint(t.w, cell(c)+sep); err != nil {
			return err
		}
	}
	return nil
}

// releaseRow is NAMESPACE, NAME, INSYNC, HEALTHY, RENDER, AGE, SYNC-REASON,
// HEALTH-REASON, REVISION (status.lastResolved's, short), MESSAGE of r. A condition not written yet is "-"; a
// condition written for an older generation is "Unknown" (the observer has
// not looked at the current spec yet).
func releaseRow(r *convoyv1alpha1.Release, now time.Time) []string {
	status := func(c *metav1.Condition) (string, string) {
		switch {
		case c == nil:
			return "", ""
		case c.ObservedGeneration != r.Generation:
			return "Unknown", "Stale"
		}
		return string(c.Status), c.Reason
	}
	inSync := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
	healthy := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
	syncStatus, syncReason := status(inSync)
	healthStatus, healthReason := status(healthy)
	render := ""
	if r.Status.LastApplied != nil {
		render = r.Status.LastApplied.RenderRef
	}
	message := ""
	for _, c := range []*metav1.Condition{inSync, healthy} {
		if c != nil && c.Status != metav1.ConditionTrue {
			message = c.Message
			break
		}
	}
	return []string{r.Namespace, r.Name, syncStatus, healthStatus, render,
		duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)), syncReason, healthReason, describe.ShortRevision(r.Status.LastResolved), message}
}
