package view

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

// The filters of the list's state menu.
const (
	stateAll       = ""
	stateAttention = "attention" // not in sync or not healthy
	stateDrifted   = "drifted"   // InSync not True
	stateUnhealthy = "unhealthy" // Healthy not True
)

// The list's columns that sort, by their ?sort= key.
var sortKeys = []struct{ key, label string }{
	{"namespace", "Namespace"},
	{"name", "Name"},
	{"insync", "In sync"},
	{"healthy", "Healthy"},
	{"revision", "Revision"},
	{"synced", "Last sync"},
}

// listPage is the list of Releases.
type listPage struct {
	layout
	Namespace     string // empty: every namespace
	AllNamespaces bool
	Query         string
	State         string
	Sort          string // as asked, kept by the filter form
	States        []option
	Columns       []column
	Rows          []listRow
	Total         int
}

type option struct {
	Value, Label string
	Selected     bool
}

// column is a header: a link that sorts by it, or the other way when it
// sorts already.
type column struct {
	Label, Link, Arrow string
}

// listRow is one Release.
type listRow struct {
	Namespace, Name, Link string
	InSync, Healthy       conditionCell
	Revision              string
	RevisionTitle         string
	Synced                timeCell
	Message               string

	search string // what ?q= matches, lower case
}

// conditionCell is a condition as a badge.
type conditionCell struct {
	Status, Reason, Class string
}

func newListPage(base string, releases []convoyv1alpha1.Release, namespace string, query url.Values, now time.Time) *listPage {
	p := &listPage{
		layout:        layout{Base: base},
		Namespace:     namespace,
		AllNamespaces: namespace == "",
		Query:         strings.TrimSpace(query.Get("q")),
		State:         query.Get("state"),
		Total:         len(releases),
	}
	p.Title = "Releases in " + namespace
	if p.AllNamespaces {
		p.Title = "Releases in every namespace"
	}
	for _, s := range []option{{stateAll, "all", false}, {stateAttention, "needing attention", false}, {stateDrifted, "not in sync", false}, {stateUnhealthy, "not healthy", false}} {
		s.Selected = s.Value == p.State
		p.States = append(p.States, s)
	}
	needle := strings.ToLower(p.Query)
	p.Rows = make([]listRow, 0, len(releases))
	for i := range releases {
		row := newListRow(base, &releases[i], now)
		if needle != "" && !strings.Contains(row.search, needle) {
			continue
		}
		if !keep(p.State, row) {
			continue
		}
		p.Rows = append(p.Rows, row)
	}
	p.Sort = query.Get("sort")
	key, desc := parseSort(p.Sort, p.AllNamespaces)
	sortRows(p.Rows, key, desc)
	for _, c := range sortKeys {
		if c.key == "namespace" && !p.AllNamespaces {
			continue
		}
		col := column{Label: c.label}
		next := c.key
		if c.key == key {
			col.Arrow = "▲"
			if desc {
				col.Arrow = "▼"
			} else {
				next = "-" + c.key
			}
		}
		q := url.Values{"sort": {next}}
		if p.Query != "" {
			q.Set("q", p.Query)
		}
		if p.State != "" {
			q.Set("state", p.State)
		}
		col.Link = "?" + q.Encode()
		p.Columns = append(p.Columns, col)
	}
	return p
}

func keep(state string, row listRow) bool {
	switch state {
	case stateAttention:
		return row.InSync.Status != "True" || row.Healthy.Status != "True"
	case stateDrifted:
		return row.InSync.Status != "True"
	case stateUnhealthy:
		return row.Healthy.Status != "True"
	}
	return true
}

// parseSort reads ?sort=[-]KEY; without one (or with an unknown key) a
// namespace's list sorts by name, every namespace's by namespace and name.
func parseSort(s string, allNamespaces bool) (key string, desc bool) {
	desc = strings.HasPrefix(s, "-")
	key = strings.TrimPrefix(s, "-")
	for _, c := range sortKeys {
		if c.key == key && (key != "namespace" || allNamespaces) {
			return key, desc
		}
	}
	if allNamespaces {
		return "namespace", false
	}
	return "name", false
}

func sortRows(rows []listRow, key string, desc bool) {
	byName := func(a, b listRow) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}
	by := map[string]func(a, b listRow) int{
		"namespace": byName,
		"name":      func(a, b listRow) int { return cmp.Or(strings.Compare(a.Name, b.Name), byName(a, b)) },
		"insync": func(a, b listRow) int {
			return cmp.Or(cmp.Compare(statusRank(a.InSync.Status), statusRank(b.InSync.Status)), strings.Compare(a.InSync.Reason, b.InSync.Reason), byName(a, b))
		},
		"healthy": func(a, b listRow) int {
			return cmp.Or(cmp.Compare(statusRank(a.Healthy.Status), statusRank(b.Healthy.Status)), strings.Compare(a.Healthy.Reason, b.Healthy.Reason), byName(a, b))
		},
		"revision": func(a, b listRow) int { return cmp.Or(strings.Compare(a.Revision, b.Revision), byName(a, b)) },
		"synced":   func(a, b listRow) int { return cmp.Or(a.Synced.at.Compare(b.Synced.at), byName(a, b)) },
	}[key]
	slices.SortStableFunc(rows, func(a, b listRow) int {
		if desc {
			return by(b, a)
		}
		return by(a, b)
	})
}

// statusRank sorts what needs attention first: False, Unknown, not
// written, True.
func statusRank(s string) int {
	switch s {
	case "False":
		return 0
	case "Unknown":
		return 1
	case "True":
		return 3
	}
	return 2
}

func newListRow(base string, r *convoyv1alpha1.Release, now time.Time) listRow {
	inSync := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
	healthy := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
	row := listRow{
		Namespace: r.Namespace,
		Name:      r.Name,
		Link:      base + ReleasePath(r.Namespace, r.Name),
		InSync:    newConditionCell(inSync, r.Generation),
		Healthy:   newConditionCell(healthy, r.Generation),
		Revision:  describe.ShortRevision(r.Status.LastResolved),
	}
	if lr := r.Status.LastResolved; lr != nil {
		row.RevisionTitle = describe.LastResolved(lr)
	}
	if la := r.Status.LastApplied; la != nil {
		row.Synced = newTimeCell(&la.Time, now)
		row.Synced.Text = la.RenderRef + ", " + row.Synced.Text
	}
	for _, c := range []*metav1.Condition{inSync, healthy} {
		if c != nil && c.Status != metav1.ConditionTrue {
			row.Message = c.Message
			break
		}
	}
	row.search = strings.ToLower(strings.Join([]string{row.Namespace, row.Name, row.InSync.Reason, row.Healthy.Reason, row.Revision, row.Message}, "\x00"))
	return row
}

// newConditionCell shows c; a condition written for an older generation is
// Unknown (Stale): the observer has not looked at the current spec yet.
func newConditionCell(c *metav1.Condition, generation int64) conditionCell {
	switch {
	case c == nil:
		return conditionCell{Status: "-", Reason: "not written yet", Class: "unknown"}
	case c.ObservedGeneration != generation:
		return conditionCell{Status: "Unknown", Reason: "Stale", Class: "unknown"}
	}
	return conditionCell{Status: string(c.Status), Reason: c.Reason, Class: statusClass(string(c.Status))}
}

func statusClass(status string) string {
	switch status {
	case "True":
		return "ok"
	case "False":
		return "bad"
	}
	return "unknown"
}
