package observer

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"
)

// countingWriter returns a StatusWriter on a fake client that holds
// release, the count of its applies, and its clock.
func countingWriter(release *convoyv1alpha1.Release, recorder events.EventRecorder) (*StatusWriter, *fake.Clientset, *int, *clocktesting.FakePassiveClock) {
	client := fake.NewClientset(release)
	applies := 0
	client.PrependReactor("patch", "releases", func(clienttesting.Action) (bool, runtime.Object, error) {
		applies++
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	return NewStatusWriter(client.ConvoyV1alpha1(), recorder, clk), client, &applies, clk
}

func TestStatusWriterWritesOnlyChanges(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
	recorder := events.NewFakeRecorder(10)
	w, client, applies, clk := countingWriter(release, recorder)
	ctx := context.Background()
	inSync := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "all 2 objects are in sync"}

	wrote, err := w.SetCondition(ctx, release, inSync, nil)
	require.NoError(t, err)
	assert.True(t, wrote)

	clk.SetTime(clk.Now().Add(time.Minute))
	wrote, err = w.SetCondition(ctx, release, inSync, nil)
	require.NoError(t, err)
	assert.False(t, wrote, "same condition, same generation: no write")

	healthy := metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "2 of 2 healthy"}
	summary := &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2}
	wrote, err = w.SetCondition(ctx, release, healthy, summary)
	require.NoError(t, err)
	assert.True(t, wrote)

	release.Generation = 2
	wrote, err = w.SetCondition(ctx, release, inSync, nil)
	require.NoError(t, err)
	assert.True(t, wrote, "a new generation is written")
	assert.Equal(t, 3, *applies)
	// Events for the two transitions, not for the generation bump.
	require.Len(t, recorder.Events, 2)
	assert.Equal(t, "Normal InSync InSync is True (InSync): all 2 objects are in sync", <-recorder.Events)
	assert.Equal(t, "Normal Healthy Healthy is True (Healthy): 2 of 2 healthy", <-recorder.Events)

	got, err := client.ConvoyV1alpha1().Releases("shop").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(got.Status.Conditions, convoyv1alpha1.ConditionInSync)
	require.NotNil(t, c, "%+v", got.Status)
	assert.Equal(t, int64(2), c.ObservedGeneration)
	assert.Equal(t, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), c.LastTransitionTime.UTC(), "the status did not change: the transition time stays")
	assert.NotNil(t, meta.FindStatusCondition(got.Status.Conditions, convoyv1alpha1.ConditionHealthy),
		"writing InSync keeps Healthy: every apply carries the whole observer part")
	assert.Equal(t, summary, got.Status.HealthSummary)
}

func TestStatusWriterStartsFromTheServer(t *testing.T) {
	// After a restart, the conditions on the Release are the truth: an
	// unchanged condition is not written again.
	cond := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync",
		Message: "ok", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	release := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 3},
		Status:     convoyv1alpha1.ReleaseStatus{Conditions: []metav1.Condition{cond}},
	}
	client := fake.NewClientset(release)
	w := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(1), clocktesting.NewFakePassiveClock(time.Now()))
	wrote, err := w.SetCondition(context.Background(), release, metav1.Condition{
		Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "ok"}, nil)
	require.NoError(t, err)
	assert.False(t, wrote)
}

// A message past what a condition (32 KiB) or an Event note (1 KiB) holds is
// cut, so both writes land.
func TestStatusWriterTruncatesMessages(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
	client := fake.NewClientset(release)
	recorder := events.NewFakeRecorder(1)
	w := NewStatusWriter(client.ConvoyV1alpha1(), recorder, clocktesting.NewFakePassiveClock(time.Now()))
	long := strings.Repeat("template error in ümlaut.yaml: ", 4000) // 124 KB
	_, err := w.SetCondition(context.Background(), release, metav1.Condition{
		Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionUnknown, Reason: "Undetermined", Message: long}, nil)
	require.NoError(t, err)
	got, err := client.ConvoyV1alpha1().Releases("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(got.Status.Conditions, convoyv1alpha1.ConditionInSync)
	require.NotNil(t, c)
	assert.LessOrEqual(t, len(c.Message), 32*1024)
	assert.True(t, utf8.ValidString(c.Message))
	assert.Contains(t, c.Message, "truncated]")
	note := <-recorder.Events
	assert.LessOrEqual(t, len(strings.TrimPrefix(note, "Warning Undetermined ")), 1024)
	assert.True(t, utf8.ValidString(note))
}

// status.selfHeal is written with InSync, in the same apply, only when it
// changes; the health loop's applies keep it, and a writer that starts
// after a failover takes the one on the server as the truth.
func TestStatusWriterSelfHeal(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
	w, client, applies, clk := countingWriter(release, events.NewFakeRecorder(10))
	ctx := context.Background()
	drifted := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "Drifted", Message: "web is Modified"}
	selfHeal := &convoyv1alpha1.SelfHealStatus{
		Contested: []convoyv1alpha1.ContestedField{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web",
			Path: "spec.replicas", Manager: "hpa", Subresource: "scale", Heals: 3, Since: metav1.NewTime(clk.Now())}},
		Backoff:       &metav1.Duration{Duration: 2 * time.Minute},
		NextRequestAt: &metav1.Time{Time: clk.Now().Add(2 * time.Minute)},
	}
	get := func() *convoyv1alpha1.Release {
		got, err := client.ConvoyV1alpha1().Releases("shop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return got
	}

	wrote, err := w.SetInSync(ctx, release, drifted, DriftStatus{})
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = w.SetInSync(ctx, release, drifted, DriftStatus{SelfHeal: selfHeal.DeepCopy()})
	require.NoError(t, err)
	assert.True(t, wrote, "the same condition, a new selfHeal")
	assert.True(t, apiequality.Semantic.DeepEqual(selfHeal, get().Status.SelfHeal), "%+v", get().Status.SelfHeal)
	wrote, err = w.SetInSync(ctx, release, drifted, DriftStatus{SelfHeal: selfHeal.DeepCopy()})
	require.NoError(t, err)
	assert.False(t, wrote, "nothing changed: no write")

	healthy := metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "1 of 1 healthy"}
	_, err = w.SetCondition(ctx, release, healthy, &convoyv1alpha1.HealthSummary{Total: 1, Healthy: 1})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(selfHeal, get().Status.SelfHeal), "the health loop's apply carries selfHeal: %+v", get().Status.SelfHeal)
	assert.Equal(t, 3, *applies)

	// A new leader's writer starts from the status on the server.
	after := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clk)
	wrote, err = after.SetInSync(ctx, get(), drifted, DriftStatus{SelfHeal: selfHeal.DeepCopy()})
	require.NoError(t, err)
	assert.False(t, wrote)

	// The contest ends: the apply without selfHeal removes it.
	wrote, err = after.SetInSync(ctx, get(), drifted, DriftStatus{})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Nil(t, get().Status.SelfHeal)
	assert.NotNil(t, meta.FindStatusCondition(get().Status.Conditions, convoyv1alpha1.ConditionHealthy))
}

// status.lastResolved is written with InSync only when the revision
// changes (its time is when it did), status.lastHandledRefreshAt when a
// pass handled a new request; the health loop's applies keep both, and a
// fleet at rest writes nothing.
func TestStatusWriterLastResolved(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
	w, client, applies, clk := countingWriter(release, events.NewFakeRecorder(10))
	ctx := context.Background()
	inSync := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "in sync"}
	get := func() *convoyv1alpha1.Release {
		got, err := client.ConvoyV1alpha1().Releases("shop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return got
	}
	a := &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/apps.git", Ref: "refs/heads/main", Commit: "aaaa"}
	wrote, err := w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: a})
	require.NoError(t, err)
	assert.True(t, wrote)
	first := get().Status.LastResolved
	require.NotNil(t, first)
	assert.Equal(t, "aaaa", first.Commit)
	assert.Equal(t, "refs/heads/main", first.Ref)

	clk.SetTime(clk.Now().Add(time.Minute))
	for range 3 {
		wrote, err = w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: a.DeepCopy()})
		require.NoError(t, err)
		assert.False(t, wrote, "the same revision: nothing written")
	}
	wrote, err = w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: a, HandledRefresh: "2026-12-04T20:00:00.000001Z"})
	require.NoError(t, err)
	assert.True(t, wrote, "a refresh handled")
	assert.Equal(t, "2026-12-04T20:00:00.000001Z", get().Status.LastHandledRefreshAt)
	assert.True(t, first.Time.Equal(&get().Status.LastResolved.Time), "the revision's time is kept")

	b := a.DeepCopy()
	b.Commit = "bbbb"
	wrote, err = w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: b})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, "bbbb", get().Status.LastResolved.Commit)
	assert.True(t, get().Status.LastResolved.Time.After(first.Time.Time), "a new revision, a new time")
	assert.Equal(t, "2026-12-04T20:00:00.000001Z", get().Status.LastHandledRefreshAt, "kept")

	// Unknown this pass (a failed render): kept.
	wrote, err = w.SetInSync(ctx, release, metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionUnknown, Reason: "Undetermined", Message: "x"}, DriftStatus{})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, "bbbb", get().Status.LastResolved.Commit)

	healthy := metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "1 of 1 healthy"}
	_, err = w.SetCondition(ctx, release, healthy, &convoyv1alpha1.HealthSummary{Total: 1, Healthy: 1})
	require.NoError(t, err)
	assert.Equal(t, "bbbb", get().Status.LastResolved.Commit, "the health loop's apply carries it")
	assert.NotEmpty(t, get().Status.LastHandledRefreshAt)

	after := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clk)
	n := *applies
	wrote, err = after.SetInSync(ctx, get(), metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionUnknown, Reason: "Undetermined", Message: "x"},
		DriftStatus{Resolved: b.DeepCopy(), HandledRefresh: "2026-12-04T20:00:00.000001Z"})
	require.NoError(t, err)
	assert.False(t, wrote, "a new leader starts from the status on the server")
	assert.Equal(t, n, *applies)

	wrote, err = after.SetInSync(ctx, get(), inSync, DriftStatus{NoResolution: true})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Nil(t, get().Status.LastResolved, "a ConfigMap source resolves nothing")
}

// A status write the API server refuses for a value from outside the
// observer (here: status.lastHandledRefreshAt, refused as the CRD's bound
// would) still writes the verdict, with the last accepted value, and says
// so in a Warning Event; a refusal of anything else is the caller's error.
func TestStatusWriterRefusedValue(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
	recorder := events.NewFakeRecorder(10)
	w, client, applies, _ := countingWriter(release, recorder)
	refuse := "2026-12-04T20:00:00.000002Z"
	refused := 0
	client.PrependReactor("patch", "releases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if strings.Contains(string(a.(clienttesting.PatchAction).GetPatch()), refuse) {
			refused++
			return true, nil, apierrors.NewInvalid(convoyv1alpha1.SchemeGroupVersion.WithKind("Release").GroupKind(), "web",
				field.ErrorList{field.TooLong(field.NewPath("status", "lastHandledRefreshAt"), "", 64)})
		}
		return false, nil, nil
	})
	ctx := context.Background()
	get := func() *convoyv1alpha1.Release {
		got, err := client.ConvoyV1alpha1().Releases("shop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return got
	}
	inSync := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "in sync"}
	_, err := w.SetInSync(ctx, release, inSync, DriftStatus{HandledRefresh: "2026-12-04T20:00:00.000001Z", SeenRefresh: "a"})
	require.NoError(t, err)
	assert.Equal(t, "a", w.SeenRefresh(release))

	drifted := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "Drifted", Message: "1 of 1 drifted"}
	n := *applies
	wrote, err := w.SetInSync(ctx, release, drifted, DriftStatus{HandledRefresh: refuse, SeenRefresh: "b"})
	require.NoError(t, err, "the verdict is written")
	assert.True(t, wrote)
	assert.Equal(t, 1, refused)
	assert.Equal(t, n+1, *applies, "then the verdict")
	got := get()
	assert.Equal(t, "Drifted", meta.FindStatusCondition(got.Status.Conditions, convoyv1alpha1.ConditionInSync).Reason)
	assert.Equal(t, "2026-12-04T20:00:00.000001Z", got.Status.LastHandledRefreshAt, "the last accepted value")
	assert.Equal(t, "b", w.SeenRefresh(release), "handled: not again at every pass")
	var warned bool
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, "Warning StatusRefused") && strings.Contains(e, "lastHandledRefreshAt") {
			warned = true
		}
	}
	assert.True(t, warned, "a Warning Event StatusRefused names the field")

	// Nothing from outside changed: the refusal is the caller's error.
	client.PrependReactor("patch", "releases", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(convoyv1alpha1.SchemeGroupVersion.WithKind("Release").GroupKind(), "web", nil)
	})
	_, err = w.SetInSync(ctx, release, inSync, DriftStatus{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err))
}

// Every field of status.lastResolved fits the CRD's bound, whatever a
// registry or repository named.
func TestLastResolvedBounds(t *testing.T) {
	long := strings.Repeat("v", 5000)
	got := lastResolved(&subresourcesv1alpha1.ResolvedSource{Kind: long, URL: long, Chart: long, Tag: long, Version: long, Ref: long, Digest: long, Commit: long})
	for _, f := range []struct {
		v     string
		bound int
	}{{got.Kind, 64}, {got.URL, 2048}, {got.Chart, 256}, {got.Tag, 256}, {got.Version, 256}, {got.Ref, 512}, {got.Digest, 128}, {got.Commit, 128}} {
		assert.LessOrEqual(t, len(f.v), f.bound)
		assert.NotEmpty(t, f.v)
	}
	short := &subresourcesv1alpha1.ResolvedSource{Kind: "HelmRepository", URL: "https://charts.example", Chart: "web", Version: "1.2.3", Digest: "sha256:aa"}
	assert.Equal(t, &convoyv1alpha1.LastResolved{Kind: "HelmRepository", URL: "https://charts.example", Chart: "web", Version: "1.2.3", Digest: "sha256:aa"}, lastResolved(short))
}

// status.lastResolvedValuesSource follows spec.valuesSource's revision as
// status.lastResolved follows spec.source's: written when it changes, kept
// when unknown and by the health loop's applies, dropped for a Release
// that reads no values source; the two never mix.
func TestStatusWriterLastResolvedValuesSource(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
	w, client, _, clk := countingWriter(release, events.NewFakeRecorder(10))
	ctx := context.Background()
	inSync := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "in sync"}
	get := func() *convoyv1alpha1.Release {
		got, err := client.ConvoyV1alpha1().Releases("shop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return got
	}
	chart := &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://registry.example/charts/web", Tag: "1.0.0", Digest: "sha256:aa"}
	values := &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/team.git", Ref: "refs/heads/main", Commit: "aaaa"}
	wrote, err := w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: chart, ValuesResolved: values})
	require.NoError(t, err)
	assert.True(t, wrote)
	first := get().Status
	require.NotNil(t, first.LastResolved)
	require.NotNil(t, first.LastResolvedValuesSource)
	assert.Equal(t, "sha256:aa", first.LastResolved.Digest)
	assert.Equal(t, "aaaa", first.LastResolvedValuesSource.Commit)

	clk.SetTime(clk.Now().Add(time.Minute))
	wrote, err = w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: chart.DeepCopy(), ValuesResolved: values.DeepCopy()})
	require.NoError(t, err)
	assert.False(t, wrote, "the same revisions: nothing written")

	moved := values.DeepCopy()
	moved.Commit = "bbbb"
	wrote, err = w.SetInSync(ctx, release, inSync, DriftStatus{Resolved: chart, ValuesResolved: moved})
	require.NoError(t, err)
	assert.True(t, wrote, "the values branch moved")
	got := get().Status
	assert.Equal(t, "bbbb", got.LastResolvedValuesSource.Commit)
	assert.True(t, got.LastResolvedValuesSource.Time.After(first.LastResolvedValuesSource.Time.Time))
	assert.True(t, got.LastResolved.Time.Equal(&first.LastResolved.Time), "spec.source's revision and time are kept")

	_, err = w.SetInSync(ctx, release, metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionUnknown, Reason: "Undetermined", Message: "x"}, DriftStatus{})
	require.NoError(t, err)
	_, err = w.SetCondition(ctx, release, metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "ok"}, &convoyv1alpha1.HealthSummary{Total: 1, Healthy: 1})
	require.NoError(t, err)
	assert.Equal(t, "bbbb", get().Status.LastResolvedValuesSource.Commit, "kept when unknown, carried by the health loop's apply")

	after := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(10), clk)
	wrote, err = after.SetInSync(ctx, get(), metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionUnknown, Reason: "Undetermined", Message: "x"},
		DriftStatus{Resolved: chart.DeepCopy(), ValuesResolved: moved.DeepCopy()})
	require.NoError(t, err)
	assert.False(t, wrote, "a new leader starts from the status on the server")

	wrote, err = after.SetInSync(ctx, get(), inSync, DriftStatus{Resolved: chart, NoValuesResolution: true})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Nil(t, get().Status.LastResolvedValuesSource, "no values source read: dropped")
	assert.NotNil(t, get().Status.LastResolved)
}

// A spec change that moves neither verdict costs one apply: the first
// loop's write, an observedGeneration alone, is held until the other
// loop's pass of the generation, or until StatusHold; a verdict is never
// held; Close drops what is held.
func TestStatusWriterHoldsGenerationBumps(t *testing.T) {
	inSync := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "InSync", Message: "all 2 objects are in sync"}
	drifted := metav1.Condition{Type: convoyv1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "Drifted", Message: "1 of 2 objects drifted"}
	healthy := metav1.Condition{Type: convoyv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "2 of 2 healthy"}
	summary := &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2}
	setInSync := func(c metav1.Condition) func(context.Context, *StatusWriter, *convoyv1alpha1.Release) (bool, error) {
		return func(ctx context.Context, w *StatusWriter, r *convoyv1alpha1.Release) (bool, error) {
			return w.SetInSync(ctx, r, c, DriftStatus{})
		}
	}
	setHealthy := func(ctx context.Context, w *StatusWriter, r *convoyv1alpha1.Release) (bool, error) {
		return w.SetCondition(ctx, r, healthy, summary)
	}
	unhold := func(_ context.Context, w *StatusWriter, r *convoyv1alpha1.Release) (bool, error) {
		w.Unhold(r)
		return false, nil
	}
	type step struct {
		write func(context.Context, *StatusWriter, *convoyv1alpha1.Release) (bool, error)
		wrote bool
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		wait    time.Duration // the clock moves this far after the steps
		close   bool
		applies int              // after the first generation's two
		want    map[string]int64 // observedGeneration of each condition on the server
		reason  string           // InSync's on the server
	}{
		{name: "health first, then drift: one apply", steps: []step{{setHealthy, false}, {setInSync(inSync), true}},
			applies: 1, want: map[string]int64{"InSync": 2, "Healthy": 2}, reason: "InSync"},
		{name: "drift first, then health: one apply", steps: []step{{setInSync(inSync), false}, {setHealthy, true}},
			applies: 1, want: map[string]int64{"InSync": 2, "Healthy": 2}, reason: "InSync"},
		{name: "a verdict is not held and carries the held bump", steps: []step{{setHealthy, false}, {setInSync(drifted), true}},
			applies: 1, want: map[string]int64{"InSync": 2, "Healthy": 2}, reason: "Drifted"},
		{name: "a verdict first: written at once, the other bump after", steps: []step{{setInSync(drifted), true}, {setHealthy, true}},
			applies: 2, want: map[string]int64{"InSync": 2, "Healthy": 2}, reason: "Drifted"},
		{name: "the other loop's pass failed: written at once", steps: []step{{setHealthy, false}, {unhold, false}},
			applies: 1, want: map[string]int64{"InSync": 1, "Healthy": 2}, reason: "InSync"},
		{name: "the hold ends: written alone", steps: []step{{setHealthy, false}}, wait: StatusHold,
			applies: 1, want: map[string]int64{"InSync": 1, "Healthy": 2}, reason: "InSync"},
		{name: "within the hold: nothing written yet", steps: []step{{setHealthy, false}}, wait: StatusHold - time.Second,
			applies: 0, want: map[string]int64{"InSync": 1, "Healthy": 1}, reason: "InSync"},
		{name: "closed: the held write is dropped", steps: []step{{setHealthy, false}}, wait: StatusHold, close: true,
			applies: 0, want: map[string]int64{"InSync": 1, "Healthy": 1}, reason: "InSync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", Generation: 1}}
			client := fake.NewClientset(release)
			applies := 0
			client.PrependReactor("patch", "releases", func(clienttesting.Action) (bool, runtime.Object, error) {
				applies++
				return false, nil, nil
			})
			clk := clocktesting.NewFakeClock(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
			w := NewStatusWriter(client.ConvoyV1alpha1(), events.NewFakeRecorder(100), clk).WithHold(StatusHold, clk)
			_, err := setInSync(inSync)(ctx, w, release)
			require.NoError(t, err)
			_, err = setHealthy(ctx, w, release)
			require.NoError(t, err)
			require.Equal(t, 2, applies, "the first generation: two conditions new")

			applies = 0
			release = release.DeepCopy()
			release.Generation = 2
			for i, s := range tc.steps {
				wrote, err := s.write(ctx, w, release)
				require.NoError(t, err)
				assert.Equal(t, s.wrote, wrote, "step %d", i)
			}
			if tc.close {
				w.Close()
			}
			clk.Step(tc.wait)
			assert.Equal(t, tc.applies, applies)
			got, err := client.ConvoyV1alpha1().Releases("shop").Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			for typ, gen := range tc.want {
				c := meta.FindStatusCondition(got.Status.Conditions, typ)
				require.NotNil(t, c, typ)
				assert.Equal(t, gen, c.ObservedGeneration, typ)
			}
			assert.Equal(t, tc.reason, meta.FindStatusCondition(got.Status.Conditions, convoyv1alpha1.ConditionInSync).Reason)
		})
	}
}
