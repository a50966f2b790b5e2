package diffreport

import (
	"strconv"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/sourceurl"
)

// Header is the header of the summary table.
var Header = []string{"NAMESPACE", "NAME", "CLUSTER", "RESULT", "CHANGED", "ADDED", "PRUNED", "FIELDS", "MESSAGE"}

// Rows are the rows of the summary table, one per entry shown, in the
// columns of Header. The counts of a Release that was not compared are
// empty; the message is the reason and message of an entry that has one.
func (r *Report) Rows() [][]string {
	shown := r.Shown()
	rows := make([][]string, 0, len(shown))
	for _, e := range shown {
		row := []string{e.Release.Namespace, e.Release.Name, e.Release.Cluster, string(e.Result), "", "", "", "", ""}
		if e.compared() {
			for i, n := range []int{e.Counts.Changed, e.Counts.Added, e.Counts.Pruned, e.Counts.Fields} {
				row[4+i] = strconv.Itoa(n)
			}
		}
		if e.Message != "" {
			row[8] = e.Reason + ": " + e.Message
		}
		rows = append(rows, row)
	}
	return rows
}

// compared tells whether e has a diff to count.
func (e Entry) compared() bool { return e.Result == Changed || e.Result == Unchanged }

// Select picks the Releases to compare at a revision: those whose source
// m matches (every one with a URL when m is nil), and, without m, skips
// those whose source has no revisions (a ConfigMap).
func Select(releases []convoyv1alpha1.Release, m *sourceurl.Matcher) (compare []convoyv1alpha1.Release, skipped []Entry) {
	for i := range releases {
		r := &releases[i]
		_, _, hasURL := sourceurl.Of(r.Spec.Source)
		switch {
		case m != nil && m.MatchSource(r.Spec.Source):
			compare = append(compare, *r)
		case m != nil:
		case hasURL:
			compare = append(compare, *r)
		default:
			skipped = append(skipped, Skip(ReleaseOf(r)))
		}
	}
	return compare, skipped
}
