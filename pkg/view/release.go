package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Bounds of what one page shows of the cluster's text: a value or object
// longer than maxValue bytes is cut (saying how much more there was); an
// object's changes past maxChanges are counted, not shown.
const (
	maxValue   = 16 << 10
	maxObject  = 256 << 10 // an object of the preview
	maxChanges = 200
	// openObjects drifted objects are shown open; the others collapse, as
	// does any object of more than openChanges changes.
	openObjects = 5
	openChanges = 20
)

// timeCell is a time as an age, with the time itself as its title.
type timeCell struct {
	Text, Title string
	at          time.Time
}

func newTimeCell(t *metav1.Time, now time.Time) timeCell {
	if t == nil || t.IsZero() {
		return timeCell{Text: "-"}
	}
	return timeCell{Text: ago(t.Time, now), Title: t.UTC().Format(time.RFC3339), at: t.Time}
}

func ago(t, now time.Time) string {
	if d := now.Sub(t); d >= 0 {
		return duration.HumanDuration(d) + " ago"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

// field is a labelled value of the page's summary.
type field struct {
	Label, Value string
	Time         *timeCell
}

// releasePage is one Release.
type releasePage struct {
	layout
	Namespace, Name, ListLink, PreviewLink string
	Summary                                []field
	Labels, Annotations                    []field
	Conditions                             []conditionRow
	History                                []field
	SelfHeal                               *selfHeal

	Diff      *diffSection
	DiffError string

	Health      *healthSection
	HealthError string
}

type conditionRow struct {
	Type string
	conditionCell
	Since   timeCell
	Message string
}

type selfHeal struct {
	Backoff     string
	NextRequest timeCell
	Contested   []contestedRow
}

type contestedRow struct {
	Object, Path, Manager string
	Heals                 int32
	Since                 timeCell
}

// diffSection is the /diff answer.
type diffSection struct {
	Result, Class, Reason, Message string
	// Resolved and ValuesResolved name the revisions of the source and of
	// the values source the render was made from (empty: none).
	Render, Resolved, ValuesResolved string
	Drifted                          []objectSection
	InSync                           []string
	Extra                            []extraRow
}

// objectSection is one object that is not in sync.
type objectSection struct {
	Object, Status, Class string
	ChangedBy             string
	Applied               timeCell
	Open                  bool
	Changes               []changeRow
	More                  int // changes not shown
	Contested             []contestedRow
}

type changeRow struct {
	Path, Op      string
	Desired, Live string
	Owners        []ownerCell
	Unattributed  string
	Contested     bool
}

type ownerCell struct {
	Manager, Operation string
	Time               timeCell
}

type extraRow struct {
	Object, RenderRef, Message string
}

// healthSection is the /health answer.
type healthSection struct {
	Condition *conditionRow
	Summary   string
	Entries   []healthRow
}

type healthRow struct {
	Object, State, Class, Message string
	FirstUnhealthy                timeCell
	Assessed                      string
}

func newReleasePage(base string, r *convoyv1alpha1.Release, diff *subresourcesv1alpha1.ReleaseDiff, diffErr error,
	health *subresourcesv1alpha1.ReleaseHealth, healthErr error, now time.Time) *releasePage {
	p := &releasePage{
		layout:      layout{Title: r.Namespace + "/" + r.Name, Base: base},
		Namespace:   r.Namespace,
		Name:        r.Name,
		ListLink:    base + "/namespaces/" + r.Namespace + "/releases",
		PreviewLink: base + ReleasePath(r.Namespace, r.Name) + "/preview",
	}
	policy := "manual"
	if r.Spec.SyncPolicy.Automatic != nil {
		policy = "automatic (self-heal)"
	}
	if i := r.Spec.SyncPolicy.Interval; i != nil {
		policy += ", checked every " + i.Duration.String()
	}
	target := r.Spec.TargetNamespace
	if target == "" {
		target = r.Namespace
	}
	if r.Spec.Cluster != nil {
		target += " on Cluster " + r.Spec.Cluster.Name
	}
	p.Summary = []field{
		{Label: "Source", Value: describe.Source(r)},
		{Label: "Target", Value: target},
		{Label: "Sync policy", Value: policy},
	}
	if lr := r.Status.LastResolved; lr != nil {
		t := newTimeCell(&lr.Time, now)
		p.Summary = append(p.Summary, field{Label: "Last resolved", Value: describe.LastResolved(lr), Time: &t})
	}
	if lr := r.Status.LastResolvedValuesSource; lr != nil {
		t := newTimeCell(&lr.Time, now)
		p.Summary = append(p.Summary, field{Label: "Last resolved values", Value: describe.LastResolved(lr), Time: &t})
	}
	if at := r.Status.LastHandledRefreshAt; at != "" {
		p.Summary = append(p.Summary, field{Label: "Last refresh handled", Value: at})
	}
	p.Labels = sortedFields(r.Labels)
	p.Annotations = sortedFields(r.Annotations)
	for _, c := range r.Status.Conditions {
		row := conditionRow{Type: c.Type, conditionCell: newConditionCell(&c, r.Generation), Since: newTimeCell(&c.LastTransitionTime, now), Message: cut(c.Message)}
		p.Conditions = append(p.Conditions, row)
	}
	record := func(label string, rec *convoyv1alpha1.RenderRecord) {
		if rec == nil {
			p.History = append(p.History, field{Label: label, Value: "-"})
			return
		}
		t := newTimeCell(&rec.Time, now)
		p.History = append(p.History, field{Label: label, Value: rec.RenderRef, Time: &t})
	}
	record("Last attempted", r.Status.LastAttempted)
	record("Last applied", r.Status.LastApplied)
	record("Last healthy", r.Status.LastHealthy)
	if r.Spec.Pin != nil {
		p.History = append(p.History, field{Label: "Pinned to", Value: r.Spec.Pin.RenderRef})
	}
	if ro := r.Status.Rollout; ro != nil {
		v := string(ro.Phase)
		if ro.Wave != 0 {
			v += fmt.Sprintf(" (wave %d)", ro.Wave)
		}
		p.History = append(p.History, field{Label: "Rollout", Value: v})
	}
	if sh := r.Status.SelfHeal; sh != nil {
		s := &selfHeal{Backoff: "-"}
		if sh.Backoff != nil {
			s.Backoff = sh.Backoff.Duration.String()
		}
		s.NextRequest = newTimeCell(sh.NextRequestAt, now)
		for _, c := range sh.Contested {
			s.Contested = append(s.Contested, contestedRow{
				Object:  c.Object().Describe(),
				Path:    c.Path,
				Manager: describe.Manager(c.Manager, c.Subresource),
				Heals:   c.Heals,
				Since:   newTimeCell(&c.Since, now),
			})
		}
		p.SelfHeal = s
	}
	if diffErr != nil {
		p.DiffError = diffErr.Error()
	} else if diff != nil {
		p.Diff = newDiffSection(diff, now)
	}
	if healthErr != nil {
		p.HealthError = healthErr.Error()
	} else if health != nil {
		p.Health = newHealthSection(health, now)
	}
	return p
}

func sortedFields(m map[string]string) []field {
	out := make([]field, 0, len(m))
	for k, v := range m {
		out = append(out, field{Label: k, Value: cut(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

func newDiffSection(d *subresourcesv1alpha1.ReleaseDiff, now time.Time) *diffSection {
	s := &diffSection{
		Result:  string(d.Result),
		Class:   map[subresourcesv1alpha1.DiffResult]string{subresourcesv1alpha1.DiffInSync: "ok", subresourcesv1alpha1.DiffDrifted: "bad"}[d.Result],
		Reason:  d.Reason,
		Message: cut(d.Message),
		Render:  d.RenderRef,
	}
	if s.Class == "" {
		s.Class = "unknown"
	}
	if d.RenderSource != "" {
		s.Render += " (" + string(d.RenderSource) + ")"
	}
	if d.ResolvedSource != nil {
		s.Resolved = describe.Resolved(d.ResolvedSource)
	}
	if d.ResolvedValuesSource != nil {
		s.ValuesResolved = describe.Resolved(d.ResolvedValuesSource)
	}
	for _, o := range d.Objects {
		name := o.Key().Describe()
		if o.Status == subresourcesv1alpha1.ObjectInSync {
			s.InSync = append(s.InSync, name)
			continue
		}
		obj := objectSection{
			Object:    name,
			Status:    string(o.Status),
			Class:     "bad",
			ChangedBy: strings.Join(o.ChangedBy, ", "),
			Applied:   newTimeCell(o.AppliedAt, now),
		}
		contested := map[string]bool{}
		for _, c := range o.Contested {
			contested[c.Path] = true
			obj.Contested = append(obj.Contested, contestedRow{Path: c.Path, Manager: describe.Manager(c.Manager, c.Subresource), Heals: c.Heals, Since: newTimeCell(&c.Since, now)})
		}
		for i, ch := range o.Changes {
			if i == maxChanges {
				obj.More = len(o.Changes) - i
				break
			}
			row := changeRow{Path: ch.Path, Op: string(ch.Op), Desired: value(ch.Desired), Live: value(ch.Live), Contested: contested[ch.Path]}
			for _, ow := range ch.Owners {
				owner := ownerCell{Manager: describe.Manager(ow.Manager, ow.Subresource), Operation: ow.Operation, Time: newTimeCell(ow.Time, now)}
				if ow.Time == nil {
					owner.Time.Text = "time not recorded"
				}
				row.Owners = append(row.Owners, owner)
			}
			if len(ch.Owners) == 0 {
				row.Unattributed = describe.Unattributed(ch.Unattributed)
			}
			obj.Changes = append(obj.Changes, row)
		}
		obj.Open = len(s.Drifted) < openObjects && len(o.Changes) <= openChanges
		s.Drifted = append(s.Drifted, obj)
	}
	for _, e := range d.ExtraObjects {
		s.Extra = append(s.Extra, extraRow{Object: e.Describe(), RenderRef: e.RenderRef, Message: cut(e.Message)})
	}
	return s
}

func newHealthSection(h *subresourcesv1alpha1.ReleaseHealth, now time.Time) *healthSection {
	s := &healthSection{}
	if c := h.Healthy; c != nil {
		s.Condition = &conditionRow{Type: c.Type, conditionCell: conditionCell{Status: string(c.Status), Reason: c.Reason, Class: statusClass(string(c.Status))}, Since: newTimeCell(&c.LastTransitionTime, now), Message: cut(c.Message)}
	}
	if sum := h.HealthSummary; sum != nil {
		s.Summary = fmt.Sprintf("%d objects: %d healthy, %d progressing, %d degraded, %d unknown", sum.Total, sum.Healthy, sum.Progressing, sum.Degraded, sum.Unknown)
		if sum.Suspended > 0 {
			s.Summary += fmt.Sprintf(", %d suspended", sum.Suspended)
		}
	}
	for _, e := range h.Entries {
		state := string(e.State)
		if e.HookPhase != "" {
			state += " (hook " + string(e.HookPhase) + ")"
		}
		s.Entries = append(s.Entries, healthRow{
			Object:         e.Describe(),
			State:          state,
			Class:          healthClass(e.State),
			Message:        cut(e.Message),
			FirstUnhealthy: newTimeCell(e.FirstUnhealthy, now),
			Assessed:       e.AssessedRenderRef,
		})
	}
	return s
}

func healthClass(s convoyv1alpha1.HealthState) string {
	switch s {
	case convoyv1alpha1.HealthHealthy:
		return "ok"
	case convoyv1alpha1.HealthDegraded:
		return "bad"
	case convoyv1alpha1.HealthProgressing:
		return "warn"
	}
	return "unknown"
}

// value shows a JSON value indented, with the characters that Go's encoder
// escapes for HTML (the API's) as themselves: html/template escapes them
// for the page. Absent is "(absent)".
func value(raw *runtime.RawExtension) string {
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return "(absent)"
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return cut(string(raw.Raw))
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return cut(string(raw.Raw))
	}
	return cut(strings.TrimSuffix(out.String(), "\n"))
}

// cut bounds a text of the cluster to maxValue bytes.
func cut(s string) string { return truncate.Display(s, maxValue) }
