package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// ownersOf returns the owners of the change at path of the Deployment web.
func ownersOf(t *testing.T, d subresourcesv1alpha1.ReleaseDiff, path string) subresourcesv1alpha1.FieldChange {
	t.Helper()
	for _, c := range objectDiff(t, d, "Deployment", "web").Changes {
		if c.Path == path {
			return c
		}
	}
	require.Failf(t, "no change", "no change at %s in %+v", path, d)
	return subresourcesv1alpha1.FieldChange{}
}

// Each change of a drifted object names who made it, from the live
// object's managedFields, as the real kube-apiserver records it: kubectl
// scale through /scale (no time), kubectl patch --field-manager (its time),
// an update of another manager (a label it changed); the InSync message, the
// plugin's diff and its CHANGED-BY column name them. An update that resets
// managedFields leaves its change unowned; a Missing object has no owners.
func TestDriftExplained(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=5")
	patched := time.Now()
	mustKubectl(t, "", "", "patch", "deployment", "web", "-n", ns, "--field-manager=intruder", "--type=strategic",
		"-p", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/web:6.6"}]}}}}`)
	deployments := kubeClient(t).AppsV1().Deployments(ns)
	var d *appsv1.Deployment
	// The Deployment controller writes the status meanwhile: an Update of
	// what was read may conflict, as kubectl edit's would; read again.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if d, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil {
			return err
		}
		d.Labels["app"] = "edited"
		_, err = deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	}))
	for _, m := range d.ManagedFields {
		t.Logf("managedFields: manager %q operation %s subresource %q time %v", m.Manager, m.Operation, m.Subresource, m.Time)
	}

	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	// Each change shows at the first pass whose LIST of Deployments is newer
	// than it: the first Drifted may come from a pass between the scale and
	// the patch (TestDriftMissingObjectAndSecretValue), and name the scale
	// alone. The condition of a later pass names the three.
	eventually(t, "InSync names who made each change", func(context.Context) error {
		c := inSyncOf(t, ns, "web")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Drifted" {
			return fmt.Errorf("InSync is %+v", c)
		}
		for _, who := range []string{"kubectl (scale) at an unknown time", "intruder at ", "kubectl-edit at "} {
			if !strings.Contains(c.Message, who) {
				return fmt.Errorf("no %q in InSync: %s", who, c.Message)
			}
		}
		cond = *c
		return nil
	})
	diff := getDiff(t, ns, "web", "")
	replicas := ownersOf(t, diff, "spec.replicas")
	require.Len(t, replicas.Owners, 1, "%+v", replicas)
	t.Logf("kubectl scale is recorded as %+v", replicas.Owners[0])
	assert.Equal(t, "kubectl", replicas.Owners[0].Manager)
	assert.Equal(t, "scale", replicas.Owners[0].Subresource)
	assert.Equal(t, "Update", replicas.Owners[0].Operation)

	image := ownersOf(t, diff, "spec.template.spec.containers[name=app].image")
	require.Len(t, image.Owners, 1, "%+v", image)
	assert.Equal(t, "intruder", image.Owners[0].Manager)
	require.NotNil(t, image.Owners[0].Time)
	assert.WithinDuration(t, patched, image.Owners[0].Time.Time, 10*time.Second, "the time of the patch, to the second")

	// A label added by another manager is not drift (the dry run of
	// server-side apply keeps it); one convoy set, updated, is.
	label := ownersOf(t, diff, `metadata.labels.app`)
	require.Len(t, label.Owners, 1, "%+v", label)
	assert.Equal(t, "kubectl-edit", label.Owners[0].Manager)
	assert.Equal(t, "Update", label.Owners[0].Operation)

	web := objectDiff(t, diff, "Deployment", "web")
	assert.ElementsMatch(t, []string{"kubectl (scale)", "intruder", "kubectl-edit"}, web.ChangedBy, "both managers and the editor")
	assert.Contains(t, cond.Message, "changed by ")
	for _, who := range []string{"kubectl (scale) at an unknown time", "intruder at ", "kubectl-edit at "} {
		assert.Contains(t, cond.Message, who)
	}

	eventually(t, "a Drifted Event that names who changed the fields", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Drifted" && strings.Contains(e.Note, "changed by ") && strings.Contains(e.Note, "kubectl (scale)") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})

	r := kubectlConvoy(t, "", "release", "diff", "web", "-n", ns)
	require.Equal(t, 1, r.code, r)
	t.Logf("kubectl convoy release diff web -n %s\n%s", ns, r.stdout)
	assert.Contains(t, r.stdout, "@@ spec.replicas @@ changed by kubectl (scale), time unknown\n")
	assert.Regexp(t, `@@ spec\.template\.spec\.containers\[name=app\]\.image @@ changed by intruder \d+s ago\n`, r.stdout)
	r = kubectlConvoy(t, "", "release", "get", "web", "-n", ns)
	require.Zero(t, r.code, r)
	assert.Regexp(t, fmt.Sprintf(`(?m)^Deployment\.apps\s+%s\s+web\s+Modified\s+\S+\s+kubectl-edit, kubectl \(scale\), intruder\s+changed: `, ns), r.stdout)

	// An update that resets managedFields leaves its change unowned.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To[int32](7)
		d.ManagedFields = []metav1.ManagedFieldsEntry{{}}
		_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
		return err
	}))
	eventually(t, "spec.replicas unowned", func(context.Context) error {
		c := ownersOf(t, getDiff(t, ns, "web", ""), "spec.replicas")
		if len(c.Owners) != 0 || c.Unattributed != subresourcesv1alpha1.UnattributedUnowned {
			return fmt.Errorf("%+v", c)
		}
		return nil
	})

	// A Missing object cannot be attributed: it has no changes.
	require.NoError(t, deployments.Delete(ctx, "web", metav1.DeleteOptions{}))
	eventually(t, "web Missing", func(context.Context) error {
		if o := objectDiff(t, getDiff(t, ns, "web", ""), "Deployment", "web"); o.Status != subresourcesv1alpha1.ObjectMissing || len(o.ChangedBy) != 0 {
			return fmt.Errorf("%+v", o)
		}
		return nil
	})
}

// A controller that takes a field back each time the stand-in heals it:
// after --contest-heals (3) take-backs the field is contested (/diff, a
// Warning Event, the metric, the InSync message), and the self-heal
// requests back off instead of one per pass; when the controller stops, the
// Release heals once more and the contest ends.
func TestDriftContested(t *testing.T) {
	t.Parallel()
	ns, requests, stopContending := contestedRelease(t)

	var contested subresourcesv1alpha1.ContestedField
	eventually(t, "spec.replicas contested by contender", func(context.Context) error {
		web := objectDiff(t, getDiff(t, ns, "web", ""), "Deployment", "web")
		for _, c := range web.Contested {
			if c.Path == "spec.replicas" && c.Manager == "contender" && c.Subresource == "scale" && c.Heals >= 3 {
				contested = c
				return nil
			}
		}
		return fmt.Errorf("contested %+v", web.Contested)
	})
	seen := requests.Load()
	t.Logf("contested: %+v, after %d sync requests", contested, seen)
	passes := countPasses(t, driftPass, ns, "web")
	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "contested (self-heal backs off): spec.replicas of Deployment.apps "+ns+"/web by contender (scale)")
	eventually(t, "a FieldContested Event", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "FieldContested" && e.Type == "Warning" && strings.Contains(e.Note, "spec.replicas") &&
				strings.Contains(e.Note, "contender (scale)") && strings.Contains(e.Note, "Remove the field from the render, or let contender own it") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
	// A gauge of the whole server: at least this Release's field (the
	// other tests that run beside this one only add to it).
	_, metrics := replicaGet(t, env.cp.ConvoyAPIServer(), "/metrics")
	assert.Regexp(t, `(?m)^convoy_observer_contested_fields [1-9]`, metrics)

	// Passes run every 2s; self-heal now waits 4s, 8s, 16s (the e2e
	// suite's --contest-max-backoff) between requests, as the server
	// stamped them, however slow the passes are (a request at each pass
	// would be one pass apart). The stand-in may not have seen the last
	// request before the contest yet, and the first request of the backoff
	// may be behind: of the five requests after, the last four are each at
	// least 4s, 8s and 16s after the one before.
	// 4s+8s+16s+16s+16s at most, and the passes' own time.
	eventuallyWithin(t, 2*time.Minute, "five sync requests after the contest was found", func(context.Context) error {
		if got := requests.Load() - seen; got < 5 {
			return fmt.Errorf("%d sync requests", got)
		}
		return nil
	})
	at := requests.times()[seen : seen+5]
	t.Logf("sync requests after the contest was found: %v, against %d passes", at, passes.since(t))
	// The server stamps a request a little after the pass that decided it.
	const slack = 100 * time.Millisecond
	for i, least := range []time.Duration{4 * time.Second, 8 * time.Second, 16 * time.Second} {
		assert.GreaterOrEqual(t, at[i+2].Sub(at[i+1]), least-slack, "self-heal backs off: request %d after the contest", i+3)
	}
	// The loop made its passes meanwhile: the gaps are its backoff, not a
	// loop that did not look (at least 8 passes in the 28s or more).
	passes.requireAtLeast(t, 8)

	// The contender stops: the next self-heal holds, the contest ends once
	// the field stayed healed for the window (30s in the e2e suite).
	stopContending()
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	eventually(t, "the contest ends", func(context.Context) error {
		if c := objectDiff(t, getDiff(t, ns, "web", ""), "Deployment", "web").Contested; len(c) > 0 {
			return fmt.Errorf("still contested: %+v", c)
		}
		return nil
	})
}

// contestedRelease makes the automatic Release web of a new namespace, in
// sync, whose Deployment web a contender scales to 5 through /scale whenever
// the stand-in heals it (at each sync request). It returns the namespace, the
// sync requests the stand-in saw and what stops the contender.
func contestedRelease(t *testing.T) (namespace string, requests *syncRequests, stopContending func()) {
	t.Helper()
	namespace = newNamespace(t)
	newDriftRelease(t, namespace, "web", webManifests("blue", "1.0"), automatic)
	standIn := newStandIn(t)
	standIn.apply(namespace, "web")
	waitInSync(t, namespace, "web", metav1.ConditionTrue, "InSync")
	requests = startSelfHealer(t, standIn, namespace, "web")
	return namespace, requests, startContender(t, namespace, "web")
}

// syncRequests are the sync requests a self-healer saw: the times the
// server stamped them with (convoy.kumodo.io/sync-requested-at).
type syncRequests struct {
	mu sync.Mutex
	at []time.Time
}

func (r *syncRequests) add(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, at)
}

// Load is the count of the requests seen.
func (r *syncRequests) Load() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

func (r *syncRequests) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at)
}

// startSelfHealer makes the stand-in heal the Release namespace/name at each
// of its sync requests (a new convoy.kumodo.io/sync-requested-at), until the
// test ends, and returns the requests it saw.
func startSelfHealer(t *testing.T, standIn *controllerStandIn, namespace, name string) *syncRequests {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var requests syncRequests
	var healing sync.WaitGroup
	healing.Go(func() {
		last := ""
		for ctx.Err() == nil {
			r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
			if err == nil && r.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt] != last {
				last = r.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]
				at, err := time.Parse(time.RFC3339Nano, last)
				if err != nil {
					t.Errorf("sync-requested-at %q: %v", last, err)
				}
				requests.add(at)
				if rendered, err := standIn.applier.Render(ctx, r); err != nil {
					t.Logf("stand-in render: %v", err)
				} else if err := standIn.applier.ApplyAll(ctx, r, rendered); err != nil {
					t.Logf("stand-in apply: %v", err)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Cleanup(func() {
		cancel()
		healing.Wait()
	})
	return &requests
}

// startContender scales the Deployment name of namespace to 5 through
// /scale, as the field manager "contender", whenever it is not, until the
// returned func is called or the test ends.
func startContender(t *testing.T, namespace, name string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	deployments := kubeClient(t).AppsV1().Deployments(namespace)
	var contending sync.WaitGroup
	contending.Go(func() {
		for ctx.Err() == nil {
			s, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
			if err == nil && s.Spec.Replicas != 5 {
				s.Spec.Replicas = 5
				if _, err := deployments.UpdateScale(ctx, name, s, metav1.UpdateOptions{FieldManager: "contender"}); err != nil && ctx.Err() == nil {
					t.Logf("contender: %v", err)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	stop = func() {
		cancel()
		contending.Wait()
	}
	t.Cleanup(stop)
	return stop
}
