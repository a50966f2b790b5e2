package view

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// The pure logic of the pages, each piece on its own; the pages as a whole
// are view_test.go's.

func TestParseSort(t *testing.T) {
	tests := []struct {
		sort          string
		allNamespaces bool
		key           string
		desc          bool
	}{
		{sort: "", key: "name"},
		{sort: "", allNamespaces: true, key: "namespace"},
		{sort: "synced", key: "synced"},
		{sort: "-healthy", key: "healthy", desc: true},
		{sort: "-namespace", allNamespaces: true, key: "namespace", desc: true},
		{sort: "namespace", key: "name", desc: false},
		{sort: "-namespace", key: "name", desc: false},
		{sort: "unknown", allNamespaces: true, key: "namespace"},
		{sort: "--name", key: "name"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q, all namespaces %v", tc.sort, tc.allNamespaces), func(t *testing.T) {
			key, desc := parseSort(tc.sort, tc.allNamespaces)
			assert.Equal(t, tc.key, key)
			assert.Equal(t, tc.desc, desc)
		})
	}
}

func TestKeep(t *testing.T) {
	row := func(inSync, healthy string) listRow {
		return listRow{InSync: conditionCell{Status: inSync}, Healthy: conditionCell{Status: healthy}}
	}
	tests := []struct {
		state string
		row   listRow
		want  bool
	}{
		{state: stateAll, row: row("False", "False"), want: true},
		{state: "nonsense", row: row("True", "True"), want: true},
		{state: stateAttention, row: row("True", "True")},
		{state: stateAttention, row: row("True", "Unknown"), want: true},
		{state: stateAttention, row: row("-", "True"), want: true},
		{state: stateDrifted, row: row("False", "True"), want: true},
		{state: stateDrifted, row: row("True", "False")},
		{state: stateUnhealthy, row: row("True", "False"), want: true},
		{state: stateUnhealthy, row: row("False", "True")},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %s/%s", tc.state, tc.row.InSync.Status, tc.row.Healthy.Status), func(t *testing.T) {
			assert.Equal(t, tc.want, keep(tc.state, tc.row))
		})
	}
}

// What needs attention sorts first: False, Unknown, not written, True;
// then by reason, then namespace and name.
func TestSortRowsByStatus(t *testing.T) {
	row := func(name, status, reason string) listRow {
		return listRow{Namespace: "shop", Name: name, InSync: conditionCell{Status: status, Reason: reason}}
	}
	rows := []listRow{row("a", "True", "InSync"), row("b", "-", ""), row("c", "Unknown", "Stale"),
		row("d", "False", "Drifted"), row("e", "False", "Backoff"), row("f", "False", "Drifted")}
	names := func() []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Name)
		}
		return out
	}
	sortRows(rows, "insync", false)
	assert.Equal(t, []string{"e", "d", "f", "c", "b", "a"}, names())
	sortRows(rows, "insync", true)
	assert.Equal(t, []string{"a", "b", "c", "f", "d", "e"}, names())
}

// A condition is shown for the generation it was written for only.
func TestNewConditionCell(t *testing.T) {
	tests := []struct {
		name string
		c    *metav1.Condition
		want conditionCell
	}{
		{name: "not written", want: conditionCell{Status: "-", Reason: "not written yet", Class: "unknown"}},
		{name: "for an older spec", c: &metav1.Condition{Status: metav1.ConditionTrue, Reason: "InSync", ObservedGeneration: 1},
			want: conditionCell{Status: "Unknown", Reason: "Stale", Class: "unknown"}},
		{name: "true", c: &metav1.Condition{Status: metav1.ConditionTrue, Reason: "InSync", ObservedGeneration: 2},
			want: conditionCell{Status: "True", Reason: "InSync", Class: "ok"}},
		{name: "false", c: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Drifted", ObservedGeneration: 2},
			want: conditionCell{Status: "False", Reason: "Drifted", Class: "bad"}},
		{name: "unknown", c: &metav1.Condition{Status: metav1.ConditionUnknown, Reason: "Undetermined", ObservedGeneration: 2},
			want: conditionCell{Status: "Unknown", Reason: "Undetermined", Class: "unknown"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, newConditionCell(tc.c, 2))
		})
	}
}

func TestNewTimeCell(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	tests := []struct {
		name        string
		t           *metav1.Time
		text, title string
	}{
		{name: "none", text: "-"},
		{name: "zero", t: &metav1.Time{}, text: "-"},
		{name: "past", t: at(-90 * time.Second), text: "90s ago", title: "2026-12-04T11:58:30Z"},
		{name: "now", t: at(0), text: "0s ago", title: "2026-12-04T12:00:00Z"},
		{name: "future", t: at(3 * time.Hour), text: "in 3h", title: "2026-12-04T15:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cell := newTimeCell(tc.t, now)
			assert.Equal(t, tc.text, cell.Text)
			assert.Equal(t, tc.title, cell.Title)
		})
	}
}

// An error of the Reader is the API server's status when it has one, else
// 504 for a timeout and 502 for anything else: it could not be asked.
func TestStatusOf(t *testing.T) {
	gr := schema.GroupResource{Group: "convoy.kumodo.io", Resource: "releases"}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "forbidden", err: apierrors.NewForbidden(gr, "web", errors.New("no")), want: http.StatusForbidden},
		{name: "not found, wrapped", err: fmt.Errorf("reading: %w", apierrors.NewNotFound(gr, "web")), want: http.StatusNotFound},
		{name: "unavailable", err: apierrors.NewServiceUnavailable("down"), want: http.StatusServiceUnavailable},
		{name: "a status without an error code", err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 200}}, want: http.StatusBadGateway},
		{name: "a timeout", err: fmt.Errorf("get: %w", context.DeadlineExceeded), want: http.StatusGatewayTimeout},
		{name: "anything else", err: errors.New("connection refused"), want: http.StatusBadGateway},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, statusOf(tc.err))
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"web", "shop-1", "a.b"} {
		assert.NoError(t, checkName(ok), ok)
	}
	for _, bad := range []string{"", "Web", "a/b", "..", "-web", strings.Repeat("a", 254)} {
		assert.Error(t, checkName(bad), bad)
	}
}

// cleanPath cleans as http.ServeMux does, keeping a trailing slash.
func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"/":                "/",
		"/a/b":             "/a/b",
		"/a/b/":            "/a/b/",
		"/a//b/../c/":      "/a/c/",
		"/a/./b":           "/a/b",
		"/../..":           "/",
		"/namespaces/x/..": "/namespaces",
	} {
		assert.Equal(t, want, cleanPath(in), in)
	}
}

// The health section: the summary in words (suspended only when some are),
// each entry's state with its hook phase and class.
func TestNewHealthSection(t *testing.T) {
	entry := func(name string, state convoyv1alpha1.HealthState, hook convoyv1alpha1.HookStatus) subresourcesv1alpha1.EntryHealth {
		return subresourcesv1alpha1.EntryHealth{ObjectKey: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: name},
			State: state, HookPhase: hook, AssessedRenderRef: "0123456789abcdef"}
	}
	tests := []struct {
		name      string
		health    subresourcesv1alpha1.ReleaseHealth
		summary   string
		states    []string
		classes   []string
		condition bool
	}{
		{name: "nothing assessed", summary: ""},
		{name: "a summary", health: subresourcesv1alpha1.ReleaseHealth{
			Healthy:       &metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "Degraded"},
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 5, Healthy: 1, Progressing: 1, Degraded: 1, Unknown: 2},
			Entries: []subresourcesv1alpha1.EntryHealth{entry("a", convoyv1alpha1.HealthHealthy, ""), entry("b", convoyv1alpha1.HealthDegraded, ""),
				entry("c", convoyv1alpha1.HealthProgressing, ""), entry("d", convoyv1alpha1.HealthUnknown, "")},
		}, summary: "5 objects: 1 healthy, 1 progressing, 1 degraded, 2 unknown",
			states: []string{"Healthy", "Degraded", "Progressing", "Unknown"}, classes: []string{"ok", "bad", "warn", "unknown"}, condition: true},
		{name: "suspended and a hook", health: subresourcesv1alpha1.ReleaseHealth{
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Suspended: 1},
			Entries:       []subresourcesv1alpha1.EntryHealth{entry("migrate", convoyv1alpha1.HealthHealthy, "Succeeded")},
		}, summary: "2 objects: 1 healthy, 0 progressing, 0 degraded, 0 unknown, 1 suspended",
			states: []string{"Healthy (hook Succeeded)"}, classes: []string{"ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newHealthSection(&tc.health, now)
			assert.Equal(t, tc.summary, s.Summary)
			assert.Equal(t, tc.condition, s.Condition != nil)
			var states, classes []string
			for _, e := range s.Entries {
				states, classes = append(states, e.State), append(classes, e.Class)
				assert.Equal(t, "0123456789abcdef", e.Assessed)
			}
			assert.Equal(t, tc.states, states)
			assert.Equal(t, tc.classes, classes)
		})
	}
}

// The diff section: the result's class, the render and where it comes
// from, the objects in sync by name, the drifted ones with their changes
// up to maxChanges, and open only while there are few.
func TestNewDiffSection(t *testing.T) {
	object := func(name string, status subresourcesv1alpha1.ObjectStatus, changes int) subresourcesv1alpha1.ObjectDiff {
		o := subresourcesv1alpha1.ObjectDiff{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: name, Status: status}
		for i := range changes {
			o.Changes = append(o.Changes, subresourcesv1alpha1.FieldChange{Path: fmt.Sprintf("spec.f%d", i), Op: subresourcesv1alpha1.ChangeReplace})
		}
		return o
	}
	tests := []struct {
		name     string
		diff     subresourcesv1alpha1.ReleaseDiff
		class    string
		render   string
		inSync   []string
		drifted  []string
		more     []int
		open     []bool
		extraMsg []string
	}{
		{name: "in sync", diff: subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffInSync, RenderRef: "0123456789abcdef",
			RenderSource: subresourcesv1alpha1.RenderSourceFresh, Objects: []subresourcesv1alpha1.ObjectDiff{object("web", subresourcesv1alpha1.ObjectInSync, 0)}},
			class: "ok", render: "0123456789abcdef (Fresh)", inSync: []string{"Deployment.apps shop/web"}},
		{name: "undetermined", diff: subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffUndetermined, Reason: "ClusterNotFound"},
			class: "unknown"},
		{name: "drifted, a long one collapsed", diff: subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffDrifted, RenderRef: "0123456789abcdef",
			Objects: []subresourcesv1alpha1.ObjectDiff{object("a", subresourcesv1alpha1.ObjectModified, 1), object("b", subresourcesv1alpha1.ObjectMissing, 0),
				object("c", subresourcesv1alpha1.ObjectModified, maxChanges+5)},
			ExtraObjects: []subresourcesv1alpha1.ExtraObject{{ObjectKey: convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "old"}, Message: strings.Repeat("x", maxValue+1)}}},
			class: "bad", render: "0123456789abcdef", drifted: []string{"Deployment.apps shop/a", "Deployment.apps shop/b", "Deployment.apps shop/c"},
			more: []int{0, 0, 5}, open: []bool{true, true, false}, extraMsg: []string{strings.Repeat("x", maxValue) + "… (1 bytes more)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newDiffSection(&tc.diff, now)
			assert.Equal(t, tc.class, s.Class)
			assert.Equal(t, tc.render, s.Render)
			assert.Equal(t, tc.inSync, s.InSync)
			var drifted []string
			var more []int
			var open []bool
			for _, o := range s.Drifted {
				drifted, more, open = append(drifted, o.Object), append(more, o.More), append(open, o.Open)
				assert.LessOrEqual(t, len(o.Changes), maxChanges)
			}
			assert.Equal(t, tc.drifted, drifted)
			assert.Equal(t, tc.more, more)
			assert.Equal(t, tc.open, open)
			var extraMsg []string
			for _, e := range s.Extra {
				extraMsg = append(extraMsg, e.Message)
			}
			assert.Equal(t, tc.extraMsg, extraMsg)
		})
	}
}
