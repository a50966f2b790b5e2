package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// memReader is a Reader over objects in memory. It serves the kinds of
// resources, and records what a pass looked up and read.
type memReader struct {
	resources map[schema.GroupVersionKind]string // plural names
	objects   map[convoyv1alpha1.ObjectKey]map[string]any
	getErr    map[convoyv1alpha1.ObjectKey]error
	// err fails every call, as a Reader whose cluster cannot be had.
	err error

	lookups []schema.GroupVersionKind
	reads   []convoyv1alpha1.ObjectKey
}

func newMemReader() *memReader {
	return &memReader{
		resources: map[schema.GroupVersionKind]string{
			{Group: "apps", Version: "v1", Kind: "Deployment"}: "deployments",
			{Version: "v1", Kind: "ConfigMap"}:                 "configmaps",
			{Group: "batch", Version: "v1", Kind: "Job"}:       "jobs",
		},
		objects: map[convoyv1alpha1.ObjectKey]map[string]any{},
		getErr:  map[convoyv1alpha1.ObjectKey]error{},
	}
}

func (r *memReader) Resource(_ context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	r.lookups = append(r.lookups, gvk)
	if r.err != nil {
		return schema.GroupVersionResource{}, r.err
	}
	res, ok := r.resources[gvk]
	if !ok {
		return schema.GroupVersionResource{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	}
	return gvk.GroupVersion().WithResource(res), nil
}

func (r *memReader) Get(_ context.Context, e convoyv1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	r.reads = append(r.reads, e.ObjectKey)
	if err := r.getErr[e.ObjectKey]; err != nil {
		return nil, readError("ServiceAccount shop/deployer", e, err)
	}
	obj, ok := r.objects[e.ObjectKey]
	if !ok {
		return nil, readError("ServiceAccount shop/deployer", e, apierrors.NewNotFound(schema.GroupResource{}, e.Name))
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// ResourceVersion implements Reader: a memReader has no LIST, it cannot tell
// (listingReader can).
func (r *memReader) ResourceVersion(context.Context, convoyv1alpha1.InventoryEntry) (string, bool, bool) {
	return "", false, false
}

// Scope implements Reader.
func (r *memReader) Scope(context.Context) string { return "ServiceAccount shop/deployer@" }

// cannotBeHad is the error of a Reader whose target cluster cannot be had.
var cannotBeHad = &failure.Error{Reason: ReasonCannotAssess, Message: "Cluster.convoy.kumodo.io shop/east not found"}

var (
	webEntry = convoyv1alpha1.InventoryEntry{ObjectKey: webKey, Version: "v1", RenderRef: renderA}
	cmKey    = convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	cmEntry  = convoyv1alpha1.InventoryEntry{ObjectKey: cmKey, Version: "v1", RenderRef: renderA}
)

// available is a Deployment whose rule "ready" passes or fails.
func deploymentWith(ready bool) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "status": map[string]any{"ready": ready, "replicas": int64(3)}}
}

// readyRules: Deployments must be ready; ConfigMaps are not looked at.
func readyRules(t *testing.T, extra ...convoyv1alpha1.HealthRule) *Rules {
	t.Helper()
	rules, err := NewCompiler(0).Compile([]RuleSet{set("ready", 1, append([]convoyv1alpha1.HealthRule{{
		APIVersion: "apps/v1", Resources: []string{"deployments"}, Expression: "object.status.ready",
		MessageExpression: "'not ready: ' + string(object.status.replicas) + ' replicas'",
	}}, extra...)...)})
	require.NoError(t, err)
	return rules
}

func assessedRelease(deadline *time.Duration) *convoyv1alpha1.Release {
	r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	r.Spec.HealthAssessment = &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{}}
	if deadline != nil {
		r.Spec.HealthAssessment.Deadline = &metav1.Duration{Duration: *deadline}
	}
	return r
}

func inventoryOf(entries []convoyv1alpha1.InventoryEntry, status ...convoyv1alpha1.InventoryEntryStatus) *convoyv1alpha1.ReleaseInventory {
	return &convoyv1alpha1.ReleaseInventory{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       convoyv1alpha1.ReleaseInventorySpec{Entries: entries},
		Status:     convoyv1alpha1.ReleaseInventoryStatus{Entries: status},
	}
}

// entryOf finds the status of key in an outcome.
func entryOf(t *testing.T, out Outcome, key convoyv1alpha1.ObjectKey) convoyv1alpha1.InventoryEntryStatus {
	t.Helper()
	for _, e := range out.Entries {
		if e.ObjectKey == key {
			return e
		}
	}
	require.Failf(t, "no status", "%s in %+v", key.Describe(), out.Entries)
	return convoyv1alpha1.InventoryEntryStatus{}
}

// "The state of a resource": each row of the page.
func TestPassStateOfAResource(t *testing.T) {
	widgetKey := convoyv1alpha1.ObjectKey{Group: "example.com", Kind: "Widget", Namespace: "shop", Name: "w"}
	widget := convoyv1alpha1.InventoryEntry{ObjectKey: widgetKey, Version: "v1", RenderRef: renderA}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
		errors.New(`User "system:serviceaccount:shop:deployer" cannot get resource "deployments"`))
	cases := []struct {
		name        string
		entries     []convoyv1alpha1.InventoryEntry
		object      map[string]any // the Deployment, if any
		getErr      error
		rules       []convoyv1alpha1.HealthRule // besides readyRules
		key         convoyv1alpha1.ObjectKey
		wantState   convoyv1alpha1.HealthState
		wantMessage string
		wantReads   int
		wantLookups int
	}{
		{name: "no rule applies: Healthy, not read", entries: []convoyv1alpha1.InventoryEntry{cmEntry}, key: cmKey,
			wantState: convoyv1alpha1.HealthHealthy, wantMessage: MessageNoRule},
		{name: "no rule has its apiVersion: Healthy, its kind not even looked up, though the cluster does not serve it",
			entries: []convoyv1alpha1.InventoryEntry{widget}, key: widgetKey, wantState: convoyv1alpha1.HealthHealthy, wantMessage: MessageNoRule},
		{name: "a rule has its apiVersion but the cluster does not serve the kind: Unknown",
			entries: []convoyv1alpha1.InventoryEntry{widget}, key: widgetKey,
			rules:     []convoyv1alpha1.HealthRule{{APIVersion: "example.com/v1", Resources: []string{"*"}, Expression: "true"}},
			wantState: convoyv1alpha1.HealthUnknown, wantMessage: "the cluster does not serve its kind", wantLookups: 1},
		{name: "all rules return true: Healthy", entries: []convoyv1alpha1.InventoryEntry{webEntry}, key: webKey, object: deploymentWith(true),
			wantState: convoyv1alpha1.HealthHealthy, wantReads: 1, wantLookups: 1},
		{name: "a rule returns false: Progressing, the message of the first rule that fails",
			entries: []convoyv1alpha1.InventoryEntry{webEntry}, key: webKey, object: deploymentWith(false),
			rules:     []convoyv1alpha1.HealthRule{{APIVersion: "apps/v1", Resources: []string{"*"}, Expression: "false", Message: "second"}},
			wantState: convoyv1alpha1.HealthProgressing, wantMessage: "not ready: 3 replicas", wantReads: 1, wantLookups: 1},
		{name: "a rule cannot be evaluated: Unknown", entries: []convoyv1alpha1.InventoryEntry{webEntry}, key: webKey,
			object:    map[string]any{"status": map[string]any{}},
			wantState: convoyv1alpha1.HealthUnknown, wantMessage: "cannot be evaluated", wantReads: 1, wantLookups: 1},
		{name: "a rule that does not return a bool: Unknown", entries: []convoyv1alpha1.InventoryEntry{webEntry}, key: webKey,
			object:    deploymentWith(true),
			rules:     []convoyv1alpha1.HealthRule{{APIVersion: "apps/v1", Resources: []string{"deployments"}, Expression: "object.status.replicas"}},
			wantState: convoyv1alpha1.HealthUnknown, wantMessage: "returned int 3, not a bool", wantReads: 1, wantLookups: 1},
		{name: "the resource is not on the cluster: Unknown", entries: []convoyv1alpha1.InventoryEntry{webEntry}, key: webKey,
			wantState: convoyv1alpha1.HealthUnknown, wantMessage: "not on the cluster", wantReads: 1, wantLookups: 1},
		{name: "the identity may not read it: Unknown, naming the identity, the verb and the object",
			entries: []convoyv1alpha1.InventoryEntry{webEntry}, key: webKey, getErr: forbidden,
			wantState: convoyv1alpha1.HealthUnknown, wantMessage: "ServiceAccount shop/deployer may not get Deployment.apps shop/web",
			wantReads: 1, wantLookups: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reader := newMemReader()
			if tc.object != nil {
				reader.objects[webKey] = tc.object
			}
			if tc.getErr != nil {
				reader.getErr[webKey] = tc.getErr
			}
			out := Pass(context.Background(), Input{
				Release: assessedRelease(nil), Inventory: inventoryOf(tc.entries),
				Rules: readyRules(t, tc.rules...), Reader: reader, Now: t0,
			})
			got := entryOf(t, out, tc.key)
			assert.Equal(t, tc.wantState, got.State)
			assert.Contains(t, got.Message, tc.wantMessage)
			assert.Equal(t, renderA, got.AssessedRenderRef, "assessedRenderRef is copied from renderRef")
			assert.Len(t, reader.reads, tc.wantReads, "reads")
			assert.Len(t, reader.lookups, tc.wantLookups, "kind lookups")
			assert.True(t, out.WriteEntries)
		})
	}
}

// "Progressing and Degraded": the deadline runs from firstUnhealthy, which a
// pass clears, Unknown keeps and a new render does not clear.
func TestPassDeadline(t *testing.T) {
	type step struct {
		at             time.Duration
		ready          *bool // nil: the object is gone (Unknown)
		renderRef      string
		wantState      convoyv1alpha1.HealthState
		firstUnhealthy *metav1.Time
	}
	yes, no := new(true), new(false)
	cases := []struct {
		name     string
		deadline *time.Duration
		steps    []step
	}{
		{name: "Progressing before the deadline, Degraded after it, Healthy again clears", deadline: dur(time.Minute), steps: []step{
			{at: 0, ready: no, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(0)},
			{at: 59 * time.Second, ready: no, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(0)},
			{at: time.Minute, ready: no, wantState: convoyv1alpha1.HealthDegraded, firstUnhealthy: mt(0)},
			{at: 2 * time.Minute, ready: yes, wantState: convoyv1alpha1.HealthHealthy},
			{at: 3 * time.Minute, ready: no, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(3 * time.Minute)},
		}},
		{name: "without a deadline a failing resource stays Progressing", steps: []step{
			{at: 0, ready: no, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(0)},
			{at: 24 * time.Hour, ready: no, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(0)},
		}},
		{name: "Unknown keeps firstUnhealthy, so a short read error does not start the deadline again", deadline: dur(time.Minute), steps: []step{
			{at: 0, ready: no, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(0)},
			{at: 30 * time.Second, wantState: convoyv1alpha1.HealthUnknown, firstUnhealthy: mt(0)},
			{at: time.Minute, ready: no, wantState: convoyv1alpha1.HealthDegraded, firstUnhealthy: mt(0)},
		}},
		{name: "a new render does not clear firstUnhealthy: Degraded at once", deadline: dur(time.Minute), steps: []step{
			{at: 0, ready: no, renderRef: renderA, wantState: convoyv1alpha1.HealthProgressing, firstUnhealthy: mt(0)},
			{at: 2 * time.Minute, ready: no, renderRef: renderB, wantState: convoyv1alpha1.HealthDegraded, firstUnhealthy: mt(0)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var status []convoyv1alpha1.InventoryEntryStatus
			for i, s := range tc.steps {
				reader := newMemReader()
				if s.ready != nil {
					reader.objects[webKey] = deploymentWith(*s.ready)
				}
				e := webEntry
				if s.renderRef != "" {
					e.RenderRef = s.renderRef
				}
				out := Pass(context.Background(), Input{
					Release: assessedRelease(tc.deadline), Inventory: inventoryOf([]convoyv1alpha1.InventoryEntry{e}, status...),
					Rules: readyRules(t), Reader: reader, Now: at(s.at),
				})
				got := entryOf(t, out, webKey)
				assert.Equal(t, s.wantState, got.State, "step %d", i)
				assert.Equal(t, s.firstUnhealthy, got.FirstUnhealthy, "step %d", i)
				assert.Equal(t, e.RenderRef, got.AssessedRenderRef, "step %d", i)
				status = out.Entries
			}
		})
	}
}

// "The Healthy condition" and "healthSummary": each row.
func TestPassCondition(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	ready := func(r *memReader) { r.objects[webKey] = deploymentWith(true) }
	notReady := func(r *memReader) { r.objects[webKey] = deploymentWith(false) }
	both := []convoyv1alpha1.InventoryEntry{webEntry, cmEntry}
	cases := []struct {
		name        string
		release     func(*convoyv1alpha1.Release)
		inventory   *convoyv1alpha1.ReleaseInventory
		reader      func(*memReader)
		rulesErr    error
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantSummary *convoyv1alpha1.HealthSummary // nil: keeps its last value
		wantWrite   bool
		wantSettled bool
	}{
		{name: "NotConfigured: summary all zero", release: func(r *convoyv1alpha1.Release) { r.Spec.HealthAssessment = nil },
			inventory: inventoryOf(both), reader: notReady,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonNotConfigured, wantMessage: "spec.healthAssessment is not set",
			wantSummary: &convoyv1alpha1.HealthSummary{}, wantWrite: true, wantSettled: true},
		{name: "all Healthy", inventory: inventoryOf(both), reader: ready,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonHealthy, wantMessage: "2 of 2 resources healthy",
			wantSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2}, wantWrite: true, wantSettled: true},
		{name: "worst Progressing", inventory: inventoryOf(both), reader: notReady,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonProgressing, wantMessage: "Deployment.apps shop/web is Progressing: not ready",
			wantSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Progressing: 1}, wantWrite: true},
		{name: "worst Unknown", inventory: inventoryOf(both),
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonUnknown, wantMessage: "Deployment.apps shop/web is Unknown",
			wantSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Unknown: 1}, wantWrite: true},
		{name: "worst Degraded", inventory: inventoryOf(both, convoyv1alpha1.InventoryEntryStatus{ObjectKey: webKey,
			State: convoyv1alpha1.HealthProgressing, FirstUnhealthy: mt(-time.Hour), AssessedRenderRef: renderA}),
			release: func(r *convoyv1alpha1.Release) {
				r.Spec.HealthAssessment.Deadline = &metav1.Duration{Duration: time.Minute}
			},
			reader: notReady, wantStatus: metav1.ConditionFalse, wantReason: ReasonDegraded,
			wantSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Degraded: 1}, wantWrite: true},
		{name: "Pending until every entry is at status.lastAttempted.renderRef",
			release: func(r *convoyv1alpha1.Release) {
				r.Status.LastAttempted = &convoyv1alpha1.RenderRecord{RenderRef: renderB}
			},
			inventory: inventoryOf(both), reader: ready,
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonPending, wantMessage: "waiting for render " + renderB + " to be applied: 0 of 2",
			wantSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2}, wantWrite: true},
		{name: "Pending before there is an inventory",
			release: func(r *convoyv1alpha1.Release) {
				r.Status.LastAttempted = &convoyv1alpha1.RenderRecord{RenderRef: renderB}
			},
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonPending, wantMessage: "no inventory yet",
			wantSummary: &convoyv1alpha1.HealthSummary{}},
		{name: "CannotAssess: a rule that does not compile", inventory: inventoryOf(both), reader: ready,
			rulesErr:   failure.Quiet(ReasonRuleInvalid, nil, "rule 0 of HealthRuleSet shop/bad: expression does not compile"),
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonCannotAssess, wantMessage: "cannot assess health: rule 0 of HealthRuleSet shop/bad"},
		{name: "CannotAssess: a selector that is not valid", inventory: inventoryOf(both), reader: ready,
			rulesErr:   failure.Quiet(ReasonSelectorInvalid, nil, "spec.healthAssessment.localRuleSetSelector is not valid"),
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonCannotAssess, wantMessage: "localRuleSetSelector is not valid"},
		{name: "CannotAssess: the cluster is unreachable", inventory: inventoryOf(both),
			reader:     func(r *memReader) { r.err = refused },
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonCannotAssess, wantMessage: "the cluster is unreachable (connection refused)"},
		{name: "CannotAssess: an answer of the cluster over the limit", inventory: inventoryOf(both),
			reader: func(r *memReader) {
				r.getErr[webKey] = fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", &failure.Error{Reason: cluster.ReasonResponseTooLarge,
					Message: "the answer of the API server of Cluster.convoy.kumodo.io shop/east to GET /apis/apps/v1/namespaces/shop/deployments/web is larger than 67108864 bytes, the limit of --max-target-response-bytes"})
			},
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonCannotAssess,
			wantMessage: "cannot assess health: the answer of the API server of Cluster.convoy.kumodo.io shop/east to GET /apis/apps/v1/namespaces/shop/deployments/web is larger than 67108864 bytes, the limit of --max-target-response-bytes"},
		{name: "CannotAssess: the cluster cannot be had", inventory: inventoryOf(both),
			reader:     func(r *memReader) { r.err = cannotBeHad },
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonCannotAssess, wantMessage: "Cluster.convoy.kumodo.io shop/east not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := assessedRelease(nil)
			if tc.release != nil {
				tc.release(release)
			}
			reader := newMemReader()
			if tc.reader != nil {
				tc.reader(reader)
			}
			in := Input{Release: release, Inventory: tc.inventory, Reader: reader, Now: t0, RulesErr: tc.rulesErr}
			if release.Spec.HealthAssessment != nil && tc.rulesErr == nil {
				in.Rules = readyRules(t)
			}
			out := Pass(context.Background(), in)
			assert.Equal(t, convoyv1alpha1.ConditionHealthy, out.Condition.Type)
			assert.Equal(t, tc.wantStatus, out.Condition.Status)
			assert.Equal(t, tc.wantReason, out.Condition.Reason)
			assert.Contains(t, out.Condition.Message, tc.wantMessage)
			assert.Equal(t, tc.wantSummary, out.Summary)
			if out.Summary != nil {
				assert.Zero(t, out.Summary.Suspended, "no rule here says Suspended")
			}
			assert.Equal(t, tc.wantWrite, out.WriteEntries, "write status.entries")
			assert.Equal(t, tc.wantSettled, out.Settled, "settled")
		})
	}
}

// "How health wakes the controller": the three reasons, and no others.
func TestPassSyncReasons(t *testing.T) {
	db := convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "db"},
		Version: "v1", Wave: 0, RenderRef: renderB}
	web := webEntry
	web.Wave, web.RenderRef = 1, renderB
	job := convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Group: "batch", Kind: "Job", Namespace: "shop", Name: "migrate"},
		Version: "v1", Wave: 1, RenderRef: renderB, Hook: &convoyv1alpha1.Hook{Phase: convoyv1alpha1.HookPostSync}}
	at := func(e convoyv1alpha1.InventoryEntry, ref string) convoyv1alpha1.InventoryEntry {
		e.RenderRef = ref
		return e
	}
	st := func(e convoyv1alpha1.InventoryEntry, s convoyv1alpha1.HealthState, ref string, hook convoyv1alpha1.HookStatus) convoyv1alpha1.InventoryEntryStatus {
		return convoyv1alpha1.InventoryEntryStatus{ObjectKey: e.ObjectKey, State: s, AssessedRenderRef: ref, HookPhase: hook}
	}
	const (
		H = convoyv1alpha1.HealthHealthy
		P = convoyv1alpha1.HealthProgressing
	)
	jobDone := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Failed", "status": "True"}}}}
	cases := []struct {
		name      string
		attempted string
		entries   []convoyv1alpha1.InventoryEntry
		prev      []convoyv1alpha1.InventoryEntryStatus
		ready     map[string]bool // Deployment name → ready
		job       map[string]any
		want      []string
	}{
		{name: "nothing changes", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, web},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, H, renderB, ""), st(web, P, renderB, "")},
			ready: map[string]bool{"db": true, "web": false}},
		{name: "a lower wave turns healthy: not the highest", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, web},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, P, renderB, ""), st(web, P, renderB, "")},
			ready: map[string]bool{"db": true, "web": false}},
		{name: "the highest wave turns healthy", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, web},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, H, renderB, ""), st(web, P, renderB, "")},
			ready: map[string]bool{"db": true, "web": true}, want: []string{"wave 1 is healthy"}},
		{name: "a rollout held at wave 0: the highest applied wave is that of the current render",
			attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, at(web, renderA)},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, P, renderB, ""), st(web, H, renderA, "")},
			ready: map[string]bool{"db": true, "web": true}, want: []string{"wave 0 is healthy"}},
		{name: "healthy at the previous render is not healthy at the current one",
			attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, web},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, H, renderB, ""), st(web, H, renderA, "")},
			ready: map[string]bool{"db": true, "web": true}, want: []string{"wave 1 is healthy"}},
		{name: "a new render assessed for the first time", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, at(web, renderA)},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, P, renderA, ""), st(web, P, renderA, "")},
			ready: map[string]bool{"db": false, "web": false}, want: []string{"render " + renderB + " assessed for the first time"}},
		{name: "the new render on a second entry: not the first time", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{db, web},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(db, P, renderB, ""), st(web, P, renderA, "")},
			ready: map[string]bool{"db": false, "web": false}},
		{name: "a hook completes", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{web, job},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(web, P, renderB, ""), st(job, H, renderB, convoyv1alpha1.HookRunning)},
			ready: map[string]bool{"web": false}, job: jobDone, want: []string{"hook Job.batch shop/migrate failed"}},
		{name: "a completed hook stays completed", attempted: renderB, entries: []convoyv1alpha1.InventoryEntry{web, job},
			prev:  []convoyv1alpha1.InventoryEntryStatus{st(web, P, renderB, ""), st(job, H, renderB, convoyv1alpha1.HookFailed)},
			ready: map[string]bool{"web": false}, job: jobDone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reader := newMemReader()
			for name, ready := range tc.ready {
				reader.objects[convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: name}] = deploymentWith(ready)
			}
			if tc.job != nil {
				reader.objects[job.ObjectKey] = tc.job
			}
			release := assessedRelease(nil)
			release.Status.LastAttempted = &convoyv1alpha1.RenderRecord{RenderRef: tc.attempted}
			out := Pass(context.Background(), Input{Release: release, Inventory: inventoryOf(tc.entries, tc.prev...),
				Rules: readyRules(t), Reader: reader, Now: t0})
			assert.Equal(t, tc.want, out.SyncReasons)
		})
	}
}

// "The loop also polls the workloads of lifecycle hooks. It does this also
// when the Release has no spec.healthAssessment."
func TestPassPollsHooksWithoutHealthAssessment(t *testing.T) {
	job := convoyv1alpha1.InventoryEntry{ObjectKey: convoyv1alpha1.ObjectKey{Group: "batch", Kind: "Job", Namespace: "shop", Name: "migrate"},
		Version: "v1", RenderRef: renderA, Hook: &convoyv1alpha1.Hook{Phase: convoyv1alpha1.HookPreSync}}
	release := assessedRelease(nil)
	release.Spec.HealthAssessment = nil
	inv := inventoryOf([]convoyv1alpha1.InventoryEntry{webEntry, job})

	reader := newMemReader()
	reader.objects[job.ObjectKey] = map[string]any{"status": map[string]any{}}
	out := Pass(context.Background(), Input{Release: release, Inventory: inv, Reader: reader, Now: t0})
	require.Len(t, out.Entries, 1, "only the hook gets a status")
	assert.Equal(t, convoyv1alpha1.HookRunning, out.Entries[0].HookPhase)
	assert.Equal(t, convoyv1alpha1.HealthHealthy, out.Entries[0].State)
	assert.Equal(t, []convoyv1alpha1.ObjectKey{job.ObjectKey}, reader.reads, "only the hook is read")
	assert.False(t, out.Settled, "a running hook is checked again soon")
	assert.Equal(t, ReasonNotConfigured, out.Condition.Reason)

	inv.Status.Entries = out.Entries
	reader.objects[job.ObjectKey] = map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}}
	out = Pass(context.Background(), Input{Release: release, Inventory: inv, Reader: reader, Now: t0})
	assert.Equal(t, convoyv1alpha1.HookSucceeded, out.Entries[0].HookPhase)
	assert.Equal(t, []string{"hook Job.batch shop/migrate succeeded"}, out.SyncReasons)
	assert.True(t, out.Settled)

	// A cluster that cannot be had: still NotConfigured, the hooks keep
	// their phase and nothing is written.
	reader.err = cannotBeHad
	inv.Status.Entries = out.Entries
	out = Pass(context.Background(), Input{Release: release, Inventory: inv, Reader: reader, Now: t0})
	assert.Equal(t, ReasonNotConfigured, out.Condition.Reason)
	assert.Error(t, out.HookPollErr)
	assert.False(t, out.WriteEntries)
	assert.Empty(t, out.SyncReasons)
}

// The rules of an evaluation error are counted for the metric.
func TestPassCountsEvaluationErrors(t *testing.T) {
	reader := newMemReader()
	reader.objects[webKey] = map[string]any{"status": map[string]any{}}
	out := Pass(context.Background(), Input{Release: assessedRelease(nil), Inventory: inventoryOf([]convoyv1alpha1.InventoryEntry{webEntry, cmEntry}),
		Rules: readyRules(t), Reader: reader, Now: t0})
	assert.Equal(t, 1, out.EvaluationErrors)
}

type panickingReader struct{ *memReader }

func (panickingReader) Get(context.Context, convoyv1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	panic("injected panic")
}

func TestPassPanicIsCannotAssess(t *testing.T) {
	out := Pass(context.Background(), Input{Release: assessedRelease(nil), Inventory: inventoryOf([]convoyv1alpha1.InventoryEntry{webEntry}),
		Rules: readyRules(t), Reader: panickingReader{newMemReader()}, Now: t0})
	assert.True(t, out.Panicked)
	assert.Equal(t, ReasonCannotAssess, out.Condition.Reason)
	assert.Contains(t, out.Condition.Message, "InternalError: internal error")
	assert.Contains(t, out.Condition.Message, "injected panic")
	assert.Nil(t, out.Summary, "the summary keeps its last value")
	assert.False(t, out.WriteEntries)
}

// listingReader is a memReader that a LIST told the resourceVersions of.
type listingReader struct {
	*memReader
	scope  string
	listed map[string]string // by name
}

func (r listingReader) Scope(context.Context) string { return r.scope }

func (r listingReader) ResourceVersion(_ context.Context, e convoyv1alpha1.InventoryEntry) (string, bool, bool) {
	rv, ok := r.listed[e.Name]
	return rv, ok, true
}

// An object a LIST saw unchanged is neither read nor evaluated again: its
// verdict is reused, and its state still follows the deadline.
func TestPassReusesVerdicts(t *testing.T) {
	cache := NewVerdictCache(time.Hour, clocktesting.NewFakePassiveClock(t0))
	reader := newMemReader()
	obj := deploymentWith(false)
	obj["metadata"] = map[string]any{"resourceVersion": "1"}
	reader.objects[webKey] = obj
	inv := inventoryOf([]convoyv1alpha1.InventoryEntry{webEntry})
	pass := func(r Reader, rules *Rules, at time.Duration) Outcome {
		out := Pass(context.Background(), Input{Release: assessedRelease(dur(time.Minute)), Inventory: inv, Rules: rules, Reader: r, Verdicts: cache, Now: t0.Add(at)})
		inv.Status.Entries = out.Entries
		return out
	}
	rules := readyRules(t)
	lister := listingReader{memReader: reader, scope: "ServiceAccount shop/a@", listed: map[string]string{"web": "1"}}

	assert.Equal(t, convoyv1alpha1.HealthProgressing, entryOf(t, pass(lister, rules, 0), webKey).State)
	assert.Len(t, reader.reads, 1)
	assert.Equal(t, convoyv1alpha1.HealthDegraded, entryOf(t, pass(lister, rules, 2*time.Minute), webKey).State, "the deadline passes on a reused verdict")
	assert.Len(t, reader.reads, 1, "unchanged: not read again")

	ready := deploymentWith(true)
	ready["metadata"] = map[string]any{"resourceVersion": "2"}
	reader.objects[webKey] = ready
	lister.listed["web"] = "2"
	assert.Equal(t, convoyv1alpha1.HealthHealthy, entryOf(t, pass(lister, rules, 3*time.Minute), webKey).State)
	assert.Len(t, reader.reads, 2, "a new resourceVersion is read")

	newRules, err := NewCompiler(0).Compile([]RuleSet{set("ready", 2, rules.All()[0].Rule)})
	require.NoError(t, err)
	pass(lister, newRules, 4*time.Minute)
	assert.Len(t, reader.reads, 3, "new rules: read and evaluated again")

	other := lister
	other.scope = "ServiceAccount shop/b@"
	pass(other, newRules, 5*time.Minute)
	assert.Len(t, reader.reads, 4, "another identity reads for itself")
}

// contextReader is a memReader that records the ListedAfter of the context
// of each read.
type contextReader struct {
	*memReader
	listedAfter *[]time.Time
}

func (r contextReader) Get(ctx context.Context, e convoyv1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	*r.listedAfter = append(*r.listedAfter, cluster.ListedAfter(ctx))
	return r.memReader.Get(ctx, e)
}

// A pass that follows an event (Input.ListedAfter) reads through LISTs sent
// after it; a pass that was only due shares any fresh LIST.
func TestPassListedAfter(t *testing.T) {
	for _, tc := range []struct {
		name        string
		listedAfter time.Time
	}{
		{name: "only due"},
		{name: "after a sync", listedAfter: t0.Add(-time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newMemReader()
			reader.objects[webKey] = deploymentWith(true)
			var got []time.Time
			out := Pass(context.Background(), Input{Release: assessedRelease(nil), Inventory: inventoryOf([]convoyv1alpha1.InventoryEntry{webEntry}),
				Rules: readyRules(t), Reader: contextReader{memReader: reader, listedAfter: &got}, Now: t0, ListedAfter: tc.listedAfter})
			assert.Equal(t, convoyv1alpha1.HealthHealthy, entryOf(t, out, webKey).State)
			assert.Equal(t, []time.Time{tc.listedAfter}, got)
		})
	}
}
