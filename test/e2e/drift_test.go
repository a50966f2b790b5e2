//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// passInterval is spec.syncPolicy.interval of the drift tests' Releases, so
// that the drift loop checks them again quickly.
const passInterval = "2s"

type releaseOption func(*convoyv1alpha1.Release)

func automatic(r *convoyv1alpha1.Release) {
	r.Spec.SyncPolicy.Automatic = &convoyv1alpha1.AutomaticSync{}
}

func onCluster(name string) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.Cluster = &convoyv1alpha1.ClusterReference{Name: name} }
}

// newDriftRelease creates the manifests and a Release checked every
// passInterval.
func newDriftRelease(t *testing.T, namespace, name string, files map[string]string, opts ...releaseOption) *convoyv1alpha1.Release {
	t.Helper()
	setManifests(t, namespace, name, files)
	return createRelease(t, namespace, name, opts...)
}

// createRelease creates a Release that renders the ConfigMap name+"-manifests",
// checked every passInterval.
func createRelease(t *testing.T, namespace, name string, opts ...releaseOption) *convoyv1alpha1.Release {
	t.Helper()
	interval, err := time.ParseDuration(passInterval)
	require.NoError(t, err)
	r := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: convoyv1alpha1.ReleaseSpec{
			Source:     convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: name + "-manifests"}},
			SyncPolicy: convoyv1alpha1.SyncPolicy{Interval: &metav1.Duration{Duration: interval}},
		},
	}
	for _, o := range opts {
		o(r)
	}
	r, err = convoyClient(t).ConvoyV1alpha1().Releases(namespace).Create(context.Background(), r, metav1.CreateOptions{})
	require.NoError(t, err)
	return r
}

func diffPath(namespace, name string) string {
	return fmt.Sprintf("%s/namespaces/%s/releases/%s/diff", subresourcesAPI, namespace, name)
}

// getDiff GETs /diff as the admin.
func getDiff(t *testing.T, namespace, name, query string) subresourcesv1alpha1.ReleaseDiff {
	t.Helper()
	out := mustKubectl(t, "", "", "get", "--raw", diffPath(namespace, name)+query)
	var d subresourcesv1alpha1.ReleaseDiff
	require.NoError(t, json.Unmarshal([]byte(out), &d), out)
	return d
}

// waitInSync waits until the InSync condition has status and reason, and
// returns it.
func waitInSync(t *testing.T, namespace, name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, fmt.Sprintf("InSync %s/%s of %s/%s", status, reason, namespace, name), func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		if c == nil {
			return fmt.Errorf("no InSync condition yet")
		}
		if c.Status != status || c.Reason != reason {
			return fmt.Errorf("InSync is %s/%s: %s", c.Status, c.Reason, c.Message)
		}
		if c.ObservedGeneration != r.Generation {
			return fmt.Errorf("InSync observed generation %d, release at %d", c.ObservedGeneration, r.Generation)
		}
		got = *c
		return nil
	})
	return got
}

// objectDiff finds the entry of kind/name in d.
func objectDiff(t *testing.T, d subresourcesv1alpha1.ReleaseDiff, kind, name string) subresourcesv1alpha1.ObjectDiff {
	t.Helper()
	for _, o := range d.Objects {
		if o.Kind == kind && o.Name == name {
			return o
		}
	}
	require.Failf(t, "object not in the diff", "%s %s in %+v", kind, name, d.Objects)
	return subresourcesv1alpha1.ObjectDiff{}
}

func TestDriftAppliedReleaseIsInSync(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	applied := newStandIn(t).apply(ns, "web")

	cond := waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	assert.Contains(t, cond.Message, applied.Ref)

	d := getDiff(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result)
	assert.Equal(t, applied.Ref, d.RenderRef)
	assert.Equal(t, subresourcesv1alpha1.RenderSourceFresh, d.RenderSource)
	require.Len(t, d.Objects, 2)
	for _, o := range d.Objects {
		assert.Equal(t, subresourcesv1alpha1.ObjectInSync, o.Status, "%s %s", o.Kind, o.Name)
		assert.Empty(t, o.Changes)
	}
}

func TestDriftScaledDeployment(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=5")
	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "Deployment.apps "+ns+"/web")
	assert.Contains(t, cond.Message, "spec.replicas")

	d := getDiff(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, d.Result)
	web := objectDiff(t, d, "Deployment", "web")
	assert.Equal(t, subresourcesv1alpha1.ObjectModified, web.Status)
	require.Len(t, web.Changes, 1, "%+v", web.Changes)
	assert.Equal(t, "spec.replicas", web.Changes[0].Path)
	assert.Equal(t, subresourcesv1alpha1.ChangeReplace, web.Changes[0].Op)
	assert.JSONEq(t, "2", string(web.Changes[0].Desired.Raw))
	assert.JSONEq(t, "5", string(web.Changes[0].Live.Raw))
	assert.Equal(t, subresourcesv1alpha1.ObjectInSync, objectDiff(t, d, "ConfigMap", "settings").Status)

	eventually(t, "an Event for the change of InSync", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Drifted" && e.Type == "Warning" && e.Regarding.Name == "web" && strings.Contains(e.Note, "InSync is False (Drifted)") {
				return nil
			}
		}
		return fmt.Errorf("no Drifted event among %d", len(events.Items))
	})

	// /diff and the condition agree: same render, same result, same message.
	assert.Equal(t, fmt.Sprintf("render %s (%s): %s", d.RenderRef, d.RenderSource, d.Message), cond.Message)
}

func TestDriftIgnoresFieldsOfOtherManagersAndDefaults(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	files := webManifests("blue", "1.0")
	files["service.yaml"] = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n"
	newDriftRelease(t, ns, "web", files)
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// Another field manager adds a label and an annotation the render does not set.
	mustKubectl(t, "", "", "label", "deployment", "web", "-n", ns, "team=payments")
	mustKubectl(t, "", "", "annotate", "configmap", "settings", "-n", ns, "example.com/owner=ops")
	live := mustKubectl(t, "", "", "get", "deployment,service", "-n", ns, "-o", "json")
	assert.Contains(t, live, `"strategy"`, "the server defaulted the Deployment strategy")
	assert.Contains(t, live, `"clusterIP"`, "the server defaulted the Service clusterIP")

	d := getDiff(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result, "%+v", d.Objects)
	// and the loop agrees, pass after pass
	passes := countPasses(t, driftPass, ns, "web")
	passes.waitAtLeast(t, 1, 3*time.Second)
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// A label the render sets, changed by another manager, is drift.
	mustKubectl(t, "", "", "label", "deployment", "web", "-n", ns, "app=other", "--overwrite")
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	change := objectDiff(t, getDiff(t, ns, "web", ""), "Deployment", "web").Changes
	require.NotEmpty(t, change)
	assert.Equal(t, "metadata.labels.app", change[0].Path)
}

func TestDriftMissingObjectAndSecretValue(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const before, after = "hunter2-before", "hunter2-after"
	files := webManifests("blue", "1.0")
	files["secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + before + "}\n"
	newDriftRelease(t, ns, "web", files)
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	mustKubectl(t, "", "", "delete", "configmap", "settings", "-n", ns)
	mustKubectl(t, "", "", "patch", "secret", "db", "-n", ns, "--type=merge", "-p", `{"stringData":{"password":"`+after+`"}}`)

	// Each change shows at the first pass whose LIST of its resource is
	// newer than it; the LISTs of ConfigMaps and of Secrets are not sent
	// together, so a pass may see the patch before the delete.
	eventually(t, "InSync names the missing ConfigMap", func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		if c == nil || c.Reason != "Drifted" || !strings.Contains(c.Message, "ConfigMap "+ns+"/settings") {
			return fmt.Errorf("InSync is %+v", c)
		}
		return nil
	})

	out := mustKubectl(t, "", "", "get", "--raw", diffPath(ns, "web"))
	for _, leaked := range []string{before, after, "aHVudGVyMi1iZWZvcmU", "aHVudGVyMi1hZnRlcg"} {
		assert.NotContains(t, out, leaked)
	}
	var d subresourcesv1alpha1.ReleaseDiff
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, subresourcesv1alpha1.ObjectMissing, objectDiff(t, d, "ConfigMap", "settings").Status)
	secret := objectDiff(t, d, "Secret", "db")
	assert.Equal(t, subresourcesv1alpha1.ObjectModified, secret.Status)
	require.Len(t, secret.Changes, 1, "%+v", secret.Changes)
	assert.Equal(t, "data.password", secret.Changes[0].Path)
	assert.Regexp(t, `^"redacted:[0-9a-f]{12}"$`, string(secret.Changes[0].Desired.Raw))
	assert.Regexp(t, `^"redacted:[0-9a-f]{12}"$`, string(secret.Changes[0].Live.Raw))
	assert.NotEqual(t, secret.Changes[0].Desired.Raw, secret.Changes[0].Live.Raw, "the change shows")
}

func TestDriftManualModeNewRender(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	setManifests(t, ns, "web", webManifests("green", "2.0"))
	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "Fresh")

	release, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, release.Annotations, convoyv1alpha1.AnnotationSyncRequestedAt, "manual mode requests no sync")

	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
}

func TestDriftAutomaticModeRequestsSync(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), automatic)
	// Before the first apply every object is Missing: that is drift too, and
	// may already have requested a sync.
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	requested := func() string {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		return r.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]
	}
	before := requested()
	passes := countPasses(t, driftPass, ns, "web")
	passes.waitAtLeast(t, 1, 2*2*time.Second) // two passes at passInterval
	require.Equal(t, before, requested(), "no sync request while in sync")

	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=7")
	eventually(t, "a sync request from the observer", func(ctx context.Context) error {
		if requested() == before {
			return fmt.Errorf("no new sync annotation")
		}
		return nil
	})
	eventually(t, "an Event naming the observer", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "SyncRequested" && e.Regarding.Name == "web" &&
				strings.Contains(e.Note, "convoy-observe") && strings.Contains(e.Note, "spec.replicas") {
				return nil
			}
		}
		return fmt.Errorf("no SyncRequested event")
	})
}

func TestDriftPinnedAndStoredRenders(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	blue := standIn.apply(ns, "web")
	setManifests(t, ns, "web", webManifests("green", "2.0"))
	green := standIn.render(ns, "web")
	standIn.storeRender(ns, "web", green)
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")

	// /diff?render=REF compares that stored render.
	d := getDiff(t, ns, "web", "?render="+blue.Ref)
	assert.Equal(t, subresourcesv1alpha1.RenderSourceStored, d.RenderSource)
	assert.Equal(t, blue.Ref, d.RenderRef)
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result)
	d = getDiff(t, ns, "web", "?render="+green.Ref)
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, d.Result)
	r := kubectl(t, "", "", "get", "--raw", diffPath(ns, "web")+"?render=00000000deadbeef")
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "NotFound")

	// A pinned Release compares against its pinned render.
	pin(t, ns, "web", blue.Ref)
	cond := waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	assert.Contains(t, cond.Message, "Pinned")
	d = getDiff(t, ns, "web", "")
	assert.Equal(t, subresourcesv1alpha1.RenderSourcePinned, d.RenderSource)
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, d.Result)
}

func TestDriftResourceVersionStable(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	waitHealthy(t, ns, "web", metav1.ConditionTrue, "NotConfigured")
	get := func() *convoyv1alpha1.Release {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		return r
	}
	before := get()
	drift, health := countPasses(t, driftPass, ns, "web"), countPasses(t, healthPass, ns, "web")
	// Three passes at passInterval; at least two of each, a pass taking up
	// to a second.
	drift.waitAtLeast(t, 2, 3*2*time.Second)
	health.waitAtLeast(t, 2, 3*2*time.Second)
	after := get()
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "passes that find nothing new write nothing")
}

func TestDiffRBAC(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	grant(t, ns, "heidi", subresourceRule("diff", "get"))
	grant(t, ns, "ivan", subresourceRule("preview", "get"))
	r := kubectl(t, user(t, "heidi"), "", "get", "--raw", diffPath(ns, "web"))
	require.NoError(t, r.err, r.stderr)
	r = kubectl(t, user(t, "ivan"), "", "get", "--raw", diffPath(ns, "web"))
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, "Forbidden")
}
