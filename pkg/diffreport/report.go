// Package diffreport is the report of kubectl convoy diff --revision: what
// one revision of a source would change in each Release that renders it
// (Entry, from the ReleaseDiff at that revision), its summary, its exit
// code, and its forms: the rows of the summary table, a Markdown report a
// CI job posts on a pull request, cut to a size a forge accepts, and JSON.
// It makes no call: the plugin asks the server and hands the answers over.
package diffreport

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// Result is what a revision does to one Release.
type Result string

// Results of a Release.
const (
	// Changed: the sync at the revision would change objects (the diff is
	// Drifted); with --changed-only, the render at the revision differs
	// from the render now.
	Changed Result = "Changed"
	// Unchanged: the sync at the revision would change nothing (InSync);
	// with --changed-only, the render at the revision is the render now.
	Unchanged Result = "Unchanged"
	// Failed: the Release could not be compared at the revision.
	Failed Result = "Error"
	// Skipped: the Release's source has no revisions (a ConfigMap).
	Skipped Result = "Skipped"
)

// RowReason is why the report classified an entry itself: the plugin's
// own words in the reason column, not a failure's reason of the server
// (pkg/failure), which the entries of the server's answers carry.
type RowReason = string

// Reasons of the entries the report itself classifies.
const (
	// ReasonNoRevisions: a ConfigMap source, which has no revision to ask for.
	ReasonNoRevisions RowReason = "NoRevisions"
	// ReasonSameRender: --changed-only, and the revision renders what the
	// Release renders now.
	ReasonSameRender RowReason = "SameRender"
	// ReasonRenderFailsNow: --changed-only, the revision renders and the
	// Release's render now fails.
	ReasonRenderFailsNow RowReason = "RenderFailsNow"
	// ReasonRequestFailed: the request failed without a reason of the server.
	ReasonRequestFailed RowReason = "RequestFailed"
)

// InCluster is the cluster of a Release without spec.cluster.
const InCluster = "in-cluster"

// Exit codes, as kubectl diff has them.
const (
	ExitNoChange = 0
	ExitChanged  = 1
	ExitError    = 2
)

// Release names a Release and its target cluster.
type Release struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Cluster is spec.cluster's name, or InCluster.
	Cluster string `json:"cluster"`
}

// ReleaseOf is the Release of r.
func ReleaseOf(r *convoyv1alpha1.Release) Release {
	cluster := InCluster
	if r.Spec.Cluster != nil && r.Spec.Cluster.Name != "" {
		cluster = r.Spec.Cluster.Name
	}
	return Release{Namespace: r.Namespace, Name: r.Name, Cluster: cluster}
}

func (r Release) String() string { return r.Namespace + "/" + r.Name }

// Counts are the objects a sync at the revision would change.
type Counts struct {
	// Changed objects: Modified.
	Changed int `json:"changed"`
	// Added objects: Missing, the sync would create them.
	Added int `json:"added"`
	// Pruned objects: the inventory's objects the render no longer holds
	// (extraObjects).
	Pruned int `json:"pruned"`
	// Fields changed, in all the Modified objects.
	Fields int `json:"fields"`
}

// CountsOf counts the objects of d.
func CountsOf(d *subresourcesv1alpha1.ReleaseDiff) Counts {
	c := Counts{Pruned: len(d.ExtraObjects)}
	for _, o := range d.Objects {
		switch o.Status {
		case subresourcesv1alpha1.ObjectModified:
			c.Changed++
			c.Fields += len(o.Changes)
		case subresourcesv1alpha1.ObjectMissing:
			c.Added++
		}
	}
	return c
}

// Entry is what the revision does to one Release.
type Entry struct {
	Release Release `json:"release"`
	Result  Result  `json:"result"`
	// Reason and Message say why, for an error, a skip or a result the
	// report decided (ReasonSameRender, ReasonRenderFailsNow).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Counts  Counts `json:"counts"`
	// Diff is the server's answer at the revision.
	Diff *subresourcesv1alpha1.ReleaseDiff `json:"diff,omitempty"`
	// Text is the diff as kubectl convoy release diff prints it, without
	// colour: the Markdown report's details of the Release.
	Text string `json:"-"`
}

// Current is the Release's desired render now (GET /preview), which
// --changed-only compares the revision's render with.
type Current struct {
	RenderRef string
	// Err is the error of GET /preview, when it failed.
	Err error
}

// Classify is the entry of rel from d, its diff at the revision. Without
// current, a Drifted diff is Changed and an InSync one Unchanged. With it
// (--changed-only), Changed means that the revision renders other objects
// than the Release renders now: the renderRefs, the hashes of the rendered
// objects, differ; a Release whose render now fails (422) and which
// renders at the revision is Changed too.
func Classify(rel Release, d *subresourcesv1alpha1.ReleaseDiff, current *Current) Entry {
	e := Entry{Release: rel, Counts: CountsOf(d), Diff: d}
	switch d.Result {
	case subresourcesv1alpha1.DiffInSync, subresourcesv1alpha1.DiffDrifted:
	case subresourcesv1alpha1.DiffUndetermined:
		e.Result, e.Reason, e.Message = Failed, d.Reason, d.Message
		return e
	default:
		e.Result, e.Reason, e.Message = Failed, ReasonRequestFailed, fmt.Sprintf("the diff has an unknown result %q", d.Result)
		return e
	}
	switch {
	case current == nil && d.Result == subresourcesv1alpha1.DiffDrifted:
		e.Result = Changed
	case current == nil:
		e.Result = Unchanged
	case current.Err != nil && statusCode(current.Err) == http.StatusUnprocessableEntity:
		e.Result, e.Reason, e.Message = Changed, ReasonRenderFailsNow, "its render now fails: "+current.Err.Error()
	case current.Err != nil:
		e.Result, e.Reason, e.Message = Failed, reasonOf(current.Err), "reading its render now: "+current.Err.Error()
	case current.RenderRef == d.RenderRef:
		e.Result, e.Reason, e.Message = Unchanged, ReasonSameRender, "the revision renders what it renders now, "+d.RenderRef
	default:
		e.Result = Changed
	}
	return e
}

// Failure is the entry of rel when asking for its diff failed with err.
func Failure(rel Release, err error) Entry {
	return Entry{Release: rel, Result: Failed, Reason: reasonOf(err), Message: err.Error()}
}

// Skip is the entry of rel, whose source has no revisions.
func Skip(rel Release) Entry {
	return Entry{Release: rel, Result: Skipped, Reason: ReasonNoRevisions, Message: "a ConfigMap source has no revisions"}
}

// reasonOf is the reason of the server's Status in err, or
// ReasonRequestFailed.
func reasonOf(err error) string {
	if reason := apierrors.ReasonForError(err); reason != "" {
		return string(reason)
	}
	return ReasonRequestFailed
}

// statusCode is the HTTP status of the server's Status in err, or 0.
func statusCode(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	return 0
}

// Summary counts the Releases by result.
type Summary struct {
	Releases  int `json:"releases"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	Errors    int `json:"errors"`
	Skipped   int `json:"skipped"`
}

// Report is what a revision does to the Releases selected.
type Report struct {
	// Revision asked for.
	Revision string `json:"revision"`
	// SourceURL selected the Releases (--source-url), when given.
	SourceURL string `json:"sourceURL,omitempty"`
	// ChangedOnly leaves the Unchanged Releases out of the table and the
	// Markdown report (not out of JSON).
	ChangedOnly bool    `json:"changedOnly,omitempty"`
	Summary     Summary `json:"summary"`
	Releases    []Entry `json:"releases"`
}

// New returns the report of entries, sorted by namespace and name.
func New(revision, sourceURL string, changedOnly bool, entries []Entry) *Report {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Release.Namespace, b.Release.Namespace), cmp.Compare(a.Release.Name, b.Release.Name))
	})
	r := &Report{Revision: revision, SourceURL: sourceURL, ChangedOnly: changedOnly, Releases: entries}
	if r.Releases == nil {
		r.Releases = []Entry{}
	}
	r.Summary.Releases = len(entries)
	for _, e := range entries {
		switch e.Result {
		case Changed:
			r.Summary.Changed++
		case Unchanged:
			r.Summary.Unchanged++
		case Failed:
			r.Summary.Errors++
		case Skipped:
			r.Summary.Skipped++
		}
	}
	return r
}

// ExitCode is 2 when a Release could not be compared, else 1 when one
// changes, else 0.
func (r *Report) ExitCode() int {
	switch {
	case r.Summary.Errors > 0:
		return ExitError
	case r.Summary.Changed > 0:
		return ExitChanged
	}
	return ExitNoChange
}

// Shown are the entries the table and the Markdown report list: all of
// them, but the Unchanged ones with ChangedOnly.
func (r *Report) Shown() []Entry {
	if !r.ChangedOnly {
		return r.Releases
	}
	return slices.DeleteFunc(slices.Clone(r.Releases), func(e Entry) bool { return e.Result == Unchanged })
}

// SummaryLine counts the Releases by result, in words.
func (r *Report) SummaryLine() string {
	s := r.Summary
	return fmt.Sprintf("%d changed, %d unchanged, %d %s, %d skipped", s.Changed, s.Unchanged, s.Errors, plural(s.Errors, "error", "errors"), s.Skipped)
}

// HiddenLine says how many Unchanged Releases ChangedOnly leaves out, or
// is empty.
func (r *Report) HiddenLine() string {
	if !r.ChangedOnly || r.Summary.Unchanged == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s the same at the revision as now: not listed (--changed-only).",
		r.Summary.Unchanged, plural(r.Summary.Unchanged, "Release renders", "Releases render"))
}

// JSON is the whole report, indented as kubectl indents JSON.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "    ")
	if err != nil {
		return nil, fmt.Errorf("encoding the report: %w", err)
	}
	return append(b, '\n'), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
