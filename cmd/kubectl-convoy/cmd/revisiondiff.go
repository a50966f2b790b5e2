package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/diffreport"
	"github.com/kumodo/convoy-apiserver/pkg/sourceurl"
)

// outputMarkdown is the -o of kubectl convoy diff's pull-request report.
const outputMarkdown = "markdown"

// revisionDiffOutputs are the formats of kubectl convoy diff's -o.
var revisionDiffOutputs = []string{outputTable, outputMarkdown, outputJSON}

// revisionDiffOptions are the flags of kubectl convoy diff.
type revisionDiffOptions struct {
	revision, sourceURL, selector, output, color string
	allNamespaces, changedOnly                   bool
	concurrency, maxReportBytes                  int
}

func newRevisionDiffCommand(o *Options) *cobra.Command {
	d := &revisionDiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff --revision REV [-n NAMESPACE | -A] [-l SELECTOR] [--source-url URL]",
		Short: "Compare every selected Release at another revision of its source with the live objects",
		Long: `Compare every selected Release, rendered from its own source at the revision REV,
with the live objects: what merging a pull request would change on each cluster.
REV is, for Git, a commit, a full ref (refs/pull/123/head, refs/merge-requests/7/head),
a branch or a tag; for OCI a tag or a digest; for a Helm repository a chart version.
Each Release is asked for GET releases/NAME/diff?revision=REV, --concurrency at a
time; nothing is written or synced.

The Releases are those of the namespace (-n, or every namespace with -A) that match
-l, and with --source-url only those whose Git, OCI or Helm repository is that URL,
however it is spelled (ssh://git@host/org/repo.git, git@host:org/repo,
https://host/org/repo/ name one Git repository). Without --source-url, Releases
with a ConfigMap source are skipped: they have no revisions.

A Release is Changed when the sync at REV would change objects (its diff is
Drifted). With --changed-only it is Changed only when REV renders other objects than
it renders now: the renderRef (the hash of the rendered objects) at REV differs from
the renderRef of GET releases/NAME/preview, which covers its path, values files and
kustomize bases alike; the others are not listed.

-o table (the default) prints a summary table, then the diff of each Changed
Release as kubectl convoy release diff prints it; -o markdown a report for a
comment on a pull request, cut at --max-report-bytes, saying what it cut; -o json
the whole report.

Exit status: 0 when no Release changes, 1 when one does, 2 when one could not be
compared (its row says why; the others are still reported) or on any error.

Needs list on releases in convoy.kumodo.io and get on releases/diff (and, with
--changed-only, releases/preview) in subresources.convoy.kumodo.io.`,
		Example: `  kubectl convoy diff --revision refs/pull/123/head -A --source-url git@github.com:acme/deploy.git
  kubectl convoy diff --revision "$GITHUB_SHA" -A --source-url "$REPO_URL" --changed-only -o markdown > report.md
  kubectl convoy diff --revision v1.4.0 -n shop -l team=web -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &ExitError{Code: diffreport.ExitError, Err: fmt.Errorf("kubectl convoy diff takes no release name, got %s: select the Releases with -n, -A, -l and --source-url, or compare one with kubectl convoy release diff NAME --revision REV", strings.Join(args, " "))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := o.runRevisionDiff(cmd.Context(), d)
			if err != nil || code != diffreport.ExitNoChange {
				return &ExitError{Code: code, Err: err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&d.revision, "revision", "", "The revision to render each Release's source at (required): Git commit, ref, branch or tag; OCI tag or digest; Helm chart version")
	f.BoolVarP(&d.allNamespaces, "all-namespaces", "A", false, "Compare the Releases of every namespace")
	f.StringVarP(&d.selector, "selector", "l", "", "Label selector of the Releases (e.g. team=web)")
	f.StringVar(&d.sourceURL, "source-url", "", "Compare only the Releases whose source is this Git, OCI or Helm repository, however its URL is spelled")
	f.BoolVar(&d.changedOnly, "changed-only", false, "List only the Releases that the revision renders differently from now (their renderRefs differ)")
	f.IntVar(&d.concurrency, "concurrency", 8, "How many Releases to compare at a time")
	f.StringVarP(&d.output, "output", "o", outputTable, "Output format: table (a summary, then each changed Release's diff), markdown (a report for a pull request) or json (the whole report)")
	f.IntVar(&d.maxReportBytes, "max-report-bytes", diffreport.DefaultReportBytes, "Cut the Markdown report to this many bytes (GitHub takes 65,536 characters in a comment), saying what was cut")
	addColorFlag(cmd, &d.color)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(revisionDiffOutputs, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: diffreport.ExitError, Err: err} })
	return cmd
}

// check refuses flags that cannot run, and returns the Matcher of
// --source-url (nil without it) and whether the table is coloured.
func (d *revisionDiffOptions) check(o *Options) (*sourceurl.Matcher, bool, error) {
	switch {
	case d.revision == "":
		return nil, false, errors.New("--revision is required: the revision to compare each Release at")
	case !slices.Contains(revisionDiffOutputs, d.output):
		return nil, false, fmt.Errorf("unknown output format %q: use one of %s", d.output, strings.Join(revisionDiffOutputs, ", "))
	case d.concurrency < 1:
		return nil, false, fmt.Errorf("--concurrency must be at least 1, not %d", d.concurrency)
	case d.output == outputMarkdown && d.maxReportBytes < diffreport.MinReportBytes:
		return nil, false, fmt.Errorf("--max-report-bytes must be at least %d, not %d", diffreport.MinReportBytes, d.maxReportBytes)
	}
	colored, err := o.colored(d.color)
	if err != nil {
		return nil, false, err
	}
	if d.sourceURL == "" {
		return nil, colored, nil
	}
	m, err := sourceurl.NewMatcher(d.sourceURL)
	if err != nil {
		return nil, false, fmt.Errorf("--source-url: %w", err)
	}
	return m, colored, nil
}

// runRevisionDiff runs kubectl convoy diff and returns its exit code.
func (o *Options) runRevisionDiff(ctx context.Context, d *revisionDiffOptions) (int, error) {
	m, colored, err := d.check(o)
	if err != nil {
		return diffreport.ExitError, err
	}
	// Two requests per Release at most (diff, preview), d.concurrency at a time.
	c, err := o.clientWithRate(float32(max(5, 10*d.concurrency)))
	if err != nil {
		return diffreport.ExitError, err
	}
	releases, err := listReleases(ctx, c, d.allNamespaces, d.selector)
	if err != nil {
		return diffreport.ExitError, err
	}
	compare, entries := diffreport.Select(releases, m)
	if len(releases) == 0 || (len(compare) == 0 && m != nil) {
		fmt.Fprintf(o.Streams.ErrOut, "No releases to compare in %s.\n", where(c.namespace, d))
	}
	entries = append(entries, c.diffAll(ctx, compare, d)...)
	report := diffreport.New(d.revision, d.sourceURL, d.changedOnly, entries)
	if err := o.printRevisionReport(report, d, colored); err != nil {
		return diffreport.ExitError, err
	}
	code := report.ExitCode()
	if code == diffreport.ExitError {
		return code, fmt.Errorf("%d of %d releases could not be compared at revision %s: see their rows", report.Summary.Errors, report.Summary.Releases, d.revision)
	}
	return code, nil
}

// where names the namespaces and selectors of d, for a message.
func where(namespace string, d *revisionDiffOptions) string {
	s := "namespace " + namespace
	if d.allNamespaces {
		s = "any namespace"
	}
	if d.selector != "" {
		s += " with labels " + d.selector
	}
	if d.sourceURL != "" {
		s += " with the source " + d.sourceURL
	}
	return s
}

// listReleases lists the Releases of c's namespace, or of all, that match
// selector.
func listReleases(ctx context.Context, c *client, all bool, selector string) ([]convoyv1alpha1.Release, error) {
	list, err := c.releases(all).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	out := make([]convoyv1alpha1.Release, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out[i]); err != nil {
			return nil, fmt.Errorf("decoding release %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	return out, nil
}

// diffAll compares releases at d.revision, d.concurrency at a time, one
// entry each: an error of one is its entry's, not the others'.
func (c *client) diffAll(ctx context.Context, releases []convoyv1alpha1.Release, d *revisionDiffOptions) []diffreport.Entry {
	entries := make([]diffreport.Entry, len(releases))
	var g errgroup.Group
	g.SetLimit(d.concurrency)
	for i := range releases {
		g.Go(func() error {
			entries[i] = c.diffAtRevision(ctx, &releases[i], d)
			return nil
		})
	}
	_ = g.Wait() // the jobs return no error: each is in its entry
	return entries
}

// diffAtRevision is the entry of r: its diff at d.revision and, with
// --changed-only, its render now.
func (c *client) diffAtRevision(ctx context.Context, r *convoyv1alpha1.Release, d *revisionDiffOptions) diffreport.Entry {
	rel := diffreport.ReleaseOf(r)
	var diff subresourcesv1alpha1.ReleaseDiff
	if _, err := c.do(ctx, request{verb: "get", subresource: "diff", namespace: r.Namespace, name: r.Name, revision: d.revision}, nil, &diff); err != nil {
		return diffreport.Failure(rel, err)
	}
	var current *diffreport.Current
	if d.changedOnly {
		var preview subresourcesv1alpha1.ReleasePreview
		_, err := c.do(ctx, request{verb: "get", subresource: "preview", namespace: r.Namespace, name: r.Name}, nil, &preview)
		current = &diffreport.Current{RenderRef: preview.RenderRef, Err: err}
	}
	e := diffreport.Classify(rel, &diff, current)
	var text bytes.Buffer
	if err := printDiff(&text, &diff, false, time.Now()); err == nil {
		e.Text = text.String()
	}
	return e
}

// printRevisionReport writes report as -o asks.
func (o *Options) printRevisionReport(report *diffreport.Report, d *revisionDiffOptions, colored bool) error {
	switch d.output {
	case outputJSON:
		b, err := report.JSON()
		if err != nil {
			return err
		}
		_, err = o.Streams.Out.Write(b)
		return err
	case outputMarkdown:
		md, err := report.Markdown(d.maxReportBytes)
		if err != nil {
			return err
		}
		_, err = io.WriteString(o.Streams.Out, md)
		return err
	}
	return printRevisionTable(o.Streams.Out, report, colored)
}

// printRevisionTable writes the summary table of report, its counts, then
// the diff of each Changed Release.
func printRevisionTable(w io.Writer, report *diffreport.Report, colored bool) error {
	rows := report.Rows()
	if len(rows) > 0 {
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, strings.Join(diffreport.Header, "\t"))
		for _, row := range rows {
			cells := make([]string, len(row))
			for i, v := range row {
				cells[i] = cell(v)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	summary := "Revision " + printers.EscapeTerminal(report.Revision) + ": " + report.SummaryLine() + ".\n"
	if line := report.HiddenLine(); line != "" {
		summary += line + "\n"
	}
	if _, err := io.WriteString(w, summary); err != nil {
		return err
	}
	for _, e := range report.Releases {
		if e.Result != diffreport.Changed || e.Diff == nil {
			continue
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := printDiff(w, e.Diff, colored, time.Now()); err != nil {
			return err
		}
	}
	return nil
}
