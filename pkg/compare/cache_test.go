package compare

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// cachingClient is a fakeClient as one identity on one cluster, which may
// know resourceVersions from a LIST.
type cachingClient struct {
	*fakeClient
	cluster string
	// listed are the resourceVersions a LIST saw, by name; nil: no LIST.
	listed map[string]string
	// lookups, when set, counts the names asked about.
	lookups map[string]int
}

func (c cachingClient) ClusterName() string { return c.cluster }

func (c cachingClient) ResourceVersion(_ context.Context, _ schema.GroupVersionKind, _, name string) (string, bool, bool) {
	if c.lookups != nil {
		c.lookups[name]++
	}
	if c.listed == nil {
		return "", false, false
	}
	rv, ok := c.listed[name]
	return rv, ok, true
}

func withRV(u *unstructured.Unstructured, rv string) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.SetResourceVersion(rv)
	return u
}

// Each input of a compare changing forces a real dry run; all of them equal
// reuse the last compare.
func TestResultCacheKeys(t *testing.T) {
	web := deployment("shop", "web", 3, "shop:1")
	cases := []struct {
		name string
		// second describes the second compare after a first one of web at
		// resourceVersion 1 as ServiceAccount shop/a on cluster "".
		who, cluster string
		desired      *unstructured.Unstructured
		liveRV       string
		age          time.Duration
		wantDryRun   bool
	}{
		{name: "nothing changed", who: "ServiceAccount shop/a", desired: web, liveRV: "1"},
		{name: "the desired object changed", who: "ServiceAccount shop/a", desired: deployment("shop", "web", 4, "shop:1"), liveRV: "1", wantDryRun: true},
		{name: "the live object changed", who: "ServiceAccount shop/a", desired: web, liveRV: "2", wantDryRun: true},
		{name: "another identity", who: "ServiceAccount shop/b", desired: web, liveRV: "1", wantDryRun: true},
		{name: "another cluster", who: "ServiceAccount shop/a", cluster: "shop/east", desired: web, liveRV: "1", wantDryRun: true},
		{name: "too old", who: "ServiceAccount shop/a", desired: web, liveRV: "1", age: 10 * time.Minute, wantDryRun: true},
		{name: "young enough", who: "ServiceAccount shop/a", desired: web, liveRV: "1", age: 10*time.Minute - time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			engine := newTestEngine(2).WithCache(NewResultCache(10*time.Minute, clk))
			f := newFake(withRV(liveOf(web), "1"))
			f.who = "ServiceAccount shop/a"
			first := engine.Compare(context.Background(), cachingClient{fakeClient: f}, []*unstructured.Unstructured{web})
			require.Equal(t, subresourcesv1alpha1.DiffInSync, first.Verdict)
			require.Equal(t, 1, f.applyCount(web))

			clk.SetTime(clk.Now().Add(tc.age))
			f.live[keyOf(web)] = withRV(liveOf(web), tc.liveRV)
			f.who = tc.who
			second := engine.Compare(context.Background(), cachingClient{fakeClient: f, cluster: tc.cluster}, []*unstructured.Unstructured{tc.desired})
			require.NotEqual(t, subresourcesv1alpha1.DiffUndetermined, second.Verdict, second.Message)
			dryRuns := 1
			if tc.wantDryRun {
				dryRuns = 2
			}
			assert.Equal(t, dryRuns, f.applyCount(web), "dry runs")
			assert.Equal(t, 2, f.getCount(web), "without a LIST, each compare reads the object")
		})
	}
}

// With a LIST that saw the object unchanged, a compare sends nothing; an
// object the LIST did not see, or saw changed, is read and dry-run.
func TestResultCacheWithAList(t *testing.T) {
	web, api := deployment("shop", "web", 3, "shop:1"), deployment("shop", "api", 1, "api:1")
	engine := newTestEngine(2).WithCache(NewResultCache(time.Hour, clocktesting.NewFakePassiveClock(time.Now())))
	f := newFake(withRV(liveOf(web), "1"), withRV(liveOf(api), "7"))
	desired := []*unstructured.Unstructured{web, api}
	require.Equal(t, subresourcesv1alpha1.DiffInSync, engine.Compare(context.Background(), cachingClient{fakeClient: f}, desired).Verdict)

	res := engine.Compare(context.Background(), cachingClient{fakeClient: f, listed: map[string]string{"web": "1", "api": "7"}}, desired)
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, res.Verdict)
	assert.Equal(t, 1, f.getCount(web), "no read")
	assert.Equal(t, 1, f.applyCount(web), "no dry run")

	// Someone scaled web: the LIST sees a new resourceVersion.
	scaled := withRV(liveOf(deployment("shop", "web", 5, "shop:1")), "2")
	f.live[keyOf(web)] = scaled
	res = engine.Compare(context.Background(), cachingClient{fakeClient: f, listed: map[string]string{"web": "2", "api": "7"}}, desired)
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, 2, f.getCount(web))
	assert.Equal(t, 2, f.applyCount(web))
	assert.Equal(t, 1, f.getCount(api), "api unchanged: nothing sent")

	// The LIST is older than api's creation: api is read, found, reused.
	res = engine.Compare(context.Background(), cachingClient{fakeClient: f, listed: map[string]string{"web": "2"}}, desired)
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, 2, f.getCount(api), "not in the LIST: read")
	assert.Equal(t, 1, f.applyCount(api), "same resourceVersion: no dry run")

	// Gone (the LIST does not see it): read, Missing, and forgotten.
	delete(f.live, keyOf(api))
	res = engine.Compare(context.Background(), cachingClient{fakeClient: f, listed: map[string]string{"web": "2"}}, desired)
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, subresourcesv1alpha1.ObjectMissing, res.Objects[1].Status)
	f.live[keyOf(api)] = withRV(liveOf(api), "7")
	res = engine.Compare(context.Background(), cachingClient{fakeClient: f, listed: map[string]string{"web": "2", "api": "7"}}, desired)
	assert.Equal(t, subresourcesv1alpha1.ObjectInSync, res.Objects[1].Status)
	assert.Equal(t, 2, f.applyCount(api), "back with the same resourceVersion: the forgotten compare is made again")
}

// The LIST is asked about an object only when a compare of the same desired
// object may be reused: not in a first pass, nor after the desired object
// changed, where a LIST saves nothing (Snapshots count the lookups to judge
// whether a LIST is worth it).
func TestResultCacheAsksTheListOnlyWhenItCanSave(t *testing.T) {
	web, api := deployment("shop", "web", 3, "shop:1"), deployment("shop", "api", 1, "api:1")
	engine := newTestEngine(2).WithCache(NewResultCache(time.Hour, clocktesting.NewFakePassiveClock(time.Now())))
	f := newFake(withRV(liveOf(web), "1"), withRV(liveOf(api), "7"))
	listed := map[string]string{"web": "1", "api": "7"}
	lookups := map[string]int{}
	client := cachingClient{fakeClient: f, listed: listed, lookups: lookups}

	require.Equal(t, subresourcesv1alpha1.DiffInSync, engine.Compare(context.Background(), client, []*unstructured.Unstructured{web, api}).Verdict)
	assert.Empty(t, lookups, "a first pass: nothing to reuse, no lookup")

	res := engine.Compare(context.Background(), client, []*unstructured.Unstructured{deployment("shop", "web", 4, "shop:1"), api})
	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, map[string]int{"api": 1}, lookups, "web's desired object changed: no lookup")
	assert.Equal(t, 1, f.getCount(api), "api unchanged: reused from the LIST")
	assert.Equal(t, 2, f.getCount(web))
}

// Each field of an object's name as one identity on one cluster changes
// its key, and the fields cannot run into one another.
func TestResultKeyOf(t *testing.T) {
	deployments := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	base := resultKeyOf("system:serviceaccount:shop:a", "", deployments, "shop", "web")
	assert.Equal(t, base, resultKeyOf("system:serviceaccount:shop:a", "", deployments, "shop", "web"), "the key of the same object is stable")
	for name, other := range map[string]resultKey{
		"identity":                        resultKeyOf("system:serviceaccount:shop:b", "", deployments, "shop", "web"),
		"cluster":                         resultKeyOf("system:serviceaccount:shop:a", "shop/prod", deployments, "shop", "web"),
		"group":                           resultKeyOf("system:serviceaccount:shop:a", "", schema.GroupVersionKind{Group: "extensions", Version: "v1", Kind: "Deployment"}, "shop", "web"),
		"version":                         resultKeyOf("system:serviceaccount:shop:a", "", schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}, "shop", "web"),
		"kind":                            resultKeyOf("system:serviceaccount:shop:a", "", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "shop", "web"),
		"namespace":                       resultKeyOf("system:serviceaccount:shop:a", "", deployments, "shop2", "web"),
		"name":                            resultKeyOf("system:serviceaccount:shop:a", "", deployments, "shop", "web2"),
		"namespace and name run together": resultKeyOf("system:serviceaccount:shop:a", "", deployments, "shopw", "eb"),
	} {
		assert.NotEqual(t, base, other, name)
	}
}

// aheadClient records what the engine asks it to read ahead.
type aheadClient struct {
	cachingClient
	ahead *[][]string
}

func (c aheadClient) ReadAhead(_ context.Context, objects []*unstructured.Unstructured) {
	var names []string
	for _, o := range objects {
		names = append(names, o.GetName())
	}
	*c.ahead = append(*c.ahead, names)
}

// The engine asks a client that reads ahead for the objects it is about to
// read: every object but those a shared LIST showed unchanged since a
// compare to reuse, once per compare, before any read.
func TestEngineReadsAheadTheColdObjects(t *testing.T) {
	web, api := deployment("shop", "web", 3, "shop:1"), deployment("shop", "api", 1, "api:1")
	f := newFake(withRV(liveOf(web), "1"), withRV(liveOf(api), "7"))
	var ahead [][]string
	client := aheadClient{cachingClient: cachingClient{fakeClient: f, listed: map[string]string{"web": "1", "api": "7"}}, ahead: &ahead}

	require.Equal(t, subresourcesv1alpha1.DiffInSync, newTestEngine(2).Compare(context.Background(), client, []*unstructured.Unstructured{web, api}).Verdict)
	assert.Equal(t, [][]string{{"web", "api"}}, ahead, "without a cache: every object")

	ahead = nil
	engine := newTestEngine(2).WithCache(NewResultCache(time.Hour, clocktesting.NewFakePassiveClock(time.Now())))
	engine.Compare(context.Background(), client, []*unstructured.Unstructured{web, api})
	engine.Compare(context.Background(), client, []*unstructured.Unstructured{deployment("shop", "web", 4, "shop:1"), api})
	assert.Equal(t, [][]string{{"web", "api"}, {"web"}}, ahead, "a first pass reads all ahead; then only what changed")
}
