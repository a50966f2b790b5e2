package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

// Exit codes of release diff, as kubectl diff has them.
const (
	exitInSync  = 0
	exitDrifted = 1
	exitError   = 2
)

// Values of --color.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

func newDiffCommand(o *Options) *cobra.Command {
	var output, render, revision, color string
	cmd := &cobra.Command{
		Use:   "diff NAME [--render REF | --revision REV]",
		Short: "Compare the desired render of a Release with the live objects",
		Long: `Compare the desired render of a Release (or the stored render REF, or a render of
its source at the revision REV) with the live objects, as the drift loop does: one
line per object with its status (InSync, Modified, Missing), then a unified diff of
the changed fields, live (-) against desired (+), with the values as YAML.

--revision renders the Release's own source at another revision (for Git a commit,
a full ref such as refs/pull/123/head, a branch or a tag; for OCI a tag or a
digest; for a Helm repository a chart version): what a sync would change once that
revision is the one the Release follows. Nothing is written or synced. To compare
every Release of a repository at once: kubectl convoy diff --revision.

Exit status: 0 when the objects are in sync, 1 when they drifted, 2 when the
compare could not be made (the reason is printed to stderr) or on any error, as
kubectl diff.

Needs get on releases/diff in subresources.convoy.kumodo.io.`,
		Example: `  kubectl convoy release diff web -n shop
  kubectl convoy release diff web -n shop --render 0123456789abcdef
  kubectl convoy release diff web -n shop --revision refs/pull/123/head
  kubectl convoy release diff web -n shop --color=always | less -R`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := o.runDiff(cmd, args, output, request{verb: "get", subresource: "diff", render: render, revision: revision}, color)
			if err != nil || code != exitInSync {
				return &ExitError{Code: code, Err: err}
			}
			return nil
		},
	}
	addOutputFlag(cmd, &output, outputTable, "ReleaseDiff", "the object statuses and a unified diff")
	cmd.Flags().StringVar(&render, "render", "", "renderRef of a stored render to compare instead of the desired render")
	addRevisionFlag(cmd, &revision, "compare")
	addColorFlag(cmd, &color)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: exitError, Err: err} })
	return cmd
}

// addRevisionFlag adds --revision to cmd, which does what to the render.
func addRevisionFlag(cmd *cobra.Command, revision *string, what string) {
	cmd.Flags().StringVar(revision, "revision", "", "Render the Release's source at this revision (Git commit, ref, branch or tag; OCI tag or digest; Helm chart version) and "+what+" that render")
}

// addColorFlag adds --color to cmd.
func addColorFlag(cmd *cobra.Command, color *string) {
	cmd.Flags().StringVar(color, "color", colorAuto, "Colour the diff: auto (when stdout is a terminal), always or never")
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{colorAuto, colorAlways, colorNever}, cobra.ShellCompDirectiveNoFileComp))
}

// colored says whether --color=color colours the output.
func (o *Options) colored(color string) (bool, error) {
	switch color {
	case colorAuto:
		return o.isTerminal(o.Streams.Out), nil
	case colorAlways:
		return true, nil
	case colorNever:
		return false, nil
	}
	return false, fmt.Errorf("--color must be auto, always or never, not %q", color)
}

// checkRenderOptions refuses --render with --revision, as the server does.
func checkRenderOptions(req request) error {
	if req.render != "" && req.revision != "" {
		return errors.New("--render and --revision cannot be used together: a stored render has its own revision")
	}
	return nil
}

// runDiff runs release diff with req and returns its exit code.
func (o *Options) runDiff(cmd *cobra.Command, args []string, output string, req request, color string) (int, error) {
	colored, err := o.colored(color)
	if err != nil {
		return exitError, err
	}
	if err := checkRenderOptions(req); err != nil {
		return exitError, err
	}
	var diff subresourcesv1alpha1.ReleaseDiff
	_, _, raw, err := o.callRelease(cmd, args, output, req, nil, &diff)
	if err != nil {
		return exitError, err
	}
	if isTable(output) {
		err = printDiff(o.Streams.Out, &diff, colored, time.Now())
	} else {
		err = printRaw(o.Streams.Out, output, raw)
	}
	if err != nil {
		return exitError, err
	}
	return diffExitCode(&diff)
}

// diffExitCode is the exit code of d, with an error that gives the reason
// and message of an Undetermined result.
func diffExitCode(d *subresourcesv1alpha1.ReleaseDiff) (int, error) {
	switch d.Result {
	case subresourcesv1alpha1.DiffInSync:
		return exitInSync, nil
	case subresourcesv1alpha1.DiffDrifted:
		return exitDrifted, nil
	case subresourcesv1alpha1.DiffUndetermined:
		return exitError, fmt.Errorf("the diff of release %s/%s is undetermined (%s): %s", d.Namespace, d.Name, d.Reason, d.Message)
	default:
		return exitError, fmt.Errorf("the diff of release %s/%s has an unknown result %q", d.Namespace, d.Name, d.Result)
	}
}

// ANSI colours of the diff.
const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
)

// printDiff writes the status of each object of d (after, for a render at a
// revision, the revision of its source and of its values source), then a
// unified diff of the changed fields, coloured when colored.
func printDiff(w io.Writer, d *subresourcesv1alpha1.ReleaseDiff, colored bool, now time.Time) error {
	paint := func(color, s string) string {
		if !colored {
			return s
		}
		return color + s + ansiReset
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Release %s/%s", d.Namespace, d.Name)
	if d.RenderRef != "" {
		fmt.Fprintf(&b, ", render %s (%s)", d.RenderRef, d.RenderSource)
	}
	fmt.Fprintf(&b, ": %s\n", d.Result)
	if d.RenderSource == subresourcesv1alpha1.RenderSourceRevision && d.ResolvedSource != nil {
		fmt.Fprintf(&b, "Revision: %s\n", printers.EscapeTerminal(describe.Resolved(d.ResolvedSource)))
	}
	if d.RenderSource == subresourcesv1alpha1.RenderSourceRevision && d.ResolvedValuesSource != nil {
		fmt.Fprintf(&b, "Values source: %s\n", printers.EscapeTerminal(describe.Resolved(d.ResolvedValuesSource)))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(d.Objects) > 0 || len(d.ExtraObjects) > 0 {
		tw := printers.GetNewTabWriter(w)
		for _, obj := range d.Objects {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(string(obj.Status)), cell(kindGroup(obj.Group, obj.Kind)), cell(namespaced(obj.Namespace, obj.Name)))
		}
		// Objects the next sync would prune; they do not count in the result.
		for _, obj := range d.ExtraObjects {
			note := "(not in the render: the next sync prunes it)"
			if obj.Message != "" {
				note = "(not in the render; " + obj.Message + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", "Extra", cell(kindGroup(obj.Group, obj.Kind)), cell(namespaced(obj.Namespace, obj.Name)), cell(note))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	b.Reset()
	for _, obj := range d.Objects {
		if obj.Status == subresourcesv1alpha1.ObjectInSync {
			continue
		}
		id := printers.EscapeTerminal(fmt.Sprintf("%s %s %s", apiVersion(obj.Group, obj.Version), obj.Kind, namespaced(obj.Namespace, obj.Name)))
		b.WriteString("\n")
		if obj.Status == subresourcesv1alpha1.ObjectMissing {
			b.WriteString(paint(ansiBold, "--- live   "+id+" (missing)") + "\n")
			b.WriteString(paint(ansiBold, "+++ desired") + "\n")
			b.WriteString(paint(ansiCyan, "@@ not on the cluster: the whole object would be created @@") + "\n")
			continue
		}
		b.WriteString(paint(ansiBold, "--- live   "+id) + "\n")
		b.WriteString(paint(ansiBold, "+++ desired") + "\n")
		for _, ch := range obj.Changes {
			hunk := "@@ " + printers.EscapeTerminal(ch.Path) + " @@"
			if who := changedBy(ch, now); who != "" {
				hunk += " " + printers.EscapeTerminal(who)
			}
			b.WriteString(paint(ansiCyan, hunk) + "\n")
			live, desired := changeValues(ch)
			for _, l := range diffLines(live, desired) {
				line := printers.EscapeTerminal(string(l.op) + l.text)
				switch l.op {
				case opDelete:
					line = paint(ansiRed, line)
				case opInsert:
					line = paint(ansiGreen, line)
				}
				b.WriteString(line + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// changeValues are the lines of the live and the desired value of ch, as
// YAML; a value that is absent (add, remove) has no lines.
func changeValues(ch subresourcesv1alpha1.FieldChange) (live, desired []string) {
	lines := func(present bool, raw []byte) []string {
		if !present {
			return nil
		}
		if len(raw) == 0 {
			raw = []byte("null")
		}
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			y = raw
		}
		return strings.Split(strings.TrimSuffix(string(y), "\n"), "\n")
	}
	liveRaw, desiredRaw := []byte(nil), []byte(nil)
	if ch.Live != nil {
		liveRaw = ch.Live.Raw
	}
	if ch.Desired != nil {
		desiredRaw = ch.Desired.Raw
	}
	return lines(ch.Op != subresourcesv1alpha1.ChangeAdd && ch.Live != nil, liveRaw),
		lines(ch.Op != subresourcesv1alpha1.ChangeRemove && ch.Desired != nil, desiredRaw)
}

// lineOp marks a line of a unified diff.
type lineOp byte

const (
	opEqual  lineOp = ' '
	opDelete lineOp = '-'
	opInsert lineOp = '+'
)

type diffLine struct {
	op   lineOp
	text string
}

// maxLCS bounds the work of the line diff; larger values are shown as all
// of a then all of b.
const maxLCS = 1 << 20

// diffLines is a line diff of a and b: the longest common subsequence kept
// as context, the rest deleted from a and inserted from b.
func diffLines(a, b []string) []diffLine {
	var out []diffLine
	if len(a)*len(b) > maxLCS {
		for _, l := range a {
			out = append(out, diffLine{opDelete, l})
		}
		for _, l := range b {
			out = append(out, diffLine{opInsert, l})
		}
		return out
	}
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{opEqual, a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{opDelete, a[i]})
			i++
		default:
			out = append(out, diffLine{opInsert, b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, diffLine{opDelete, a[i]})
	}
	for ; j < len(b); j++ {
		out = append(out, diffLine{opInsert, b[j]})
	}
	return out
}

// changedBy says who made ch, from the live object's managedFields: each
// owner (its subresource, how long ago its entry last changed something,
// or that the time is unknown), or why nobody can be named.
func changedBy(ch subresourcesv1alpha1.FieldChange, now time.Time) string {
	if len(ch.Owners) == 0 {
		return describe.Unattributed(ch.Unattributed)
	}
	parts := make([]string, 0, len(ch.Owners))
	for _, o := range ch.Owners {
		p := describe.Manager(o.Manager, o.Subresource)
		if o.Time != nil {
			p += " " + duration.HumanDuration(now.Sub(o.Time.Time)) + " ago"
		} else {
			p += ", time unknown"
		}
		parts = append(parts, p)
	}
	return "changed by " + strings.Join(parts, "; ")
}
