package source

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/testutil"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// waitGauge waits until the gauge fetchesRunning ("running") or
// fetchesWaiting ("waiting") is want.
func waitGauge(t *testing.T, name string, want float64) {
	t.Helper()
	var got float64
	require.Eventually(t, func() bool {
		var err error
		switch name {
		case "running":
			got, err = testutil.GetGaugeMetricValue(fetchesRunning)
		default:
			got, err = testutil.GetGaugeMetricValue(fetchesWaiting)
		}
		return err == nil && got == want
	}, 20*time.Second, 5*time.Millisecond, "%s requests: %v, want %v", name, got, want)
}

// heldRegistry is a registry whose HEADs of the tags held-* wait until
// release is closed (or their client goes away), and are told on held.
func heldRegistry(t *testing.T) (reg *ociregistry.Server, held chan string, release chan struct{}) {
	t.Helper()
	held, release = make(chan string, 64), make(chan struct{})
	reg = startRegistry(t, ociregistry.Options{Hook: func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/held") {
			held <- r.URL.Path
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return false
	}})
	for _, tag := range []string{"held-1", "held-2", "held-3", "free"} {
		_, err := reg.PushChart(context.Background(), "charts/web", tag, chartTGZ, []byte(`{}`))
		require.NoError(t, err)
	}
	reg.Requests()
	return reg, held, release
}

// releaseIn is a Release of namespace whose source is tag of reg.
func releaseIn(namespace string, reg *ociregistry.Server, tag string) *convoyv1alpha1.Release {
	r := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: tag})
	r.Namespace = namespace
	return r
}

// Resolve takes a slot as Fetch does: with the only slot held, it waits.
func TestResolveTakesASlot(t *testing.T) {
	RegisterMetrics()
	ctx := context.Background()
	reg, held, release := heldRegistry(t)
	f, _ := newFetcher(t, func(o *Options) { o.Concurrency, o.PerNamespace = 1, 1 })
	fetched := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, releaseIn("a", reg, "held-1"), inputsOf())
		fetched <- err
	}()
	<-held
	resolved := make(chan string, 1)
	go func() {
		digest, err := f.Resolve(ctx, releaseIn("b", reg, "free"), inputsOf())
		assert.NoError(t, err)
		resolved <- digest
	}()
	waitGauge(t, "waiting", 1)
	close(release)
	require.NoError(t, <-fetched)
	assert.True(t, strings.HasPrefix(<-resolved, "sha256:"))
	waitGauge(t, "running", 0)
}

// A shared request whose callers all gave up keeps its slot to its end:
// the next request waits for it.
func TestSharedRequestKeepsItsSlot(t *testing.T) {
	RegisterMetrics()
	ctx := context.Background()
	reg, held, release := heldRegistry(t)
	f, _ := newFetcher(t, func(o *Options) { o.Concurrency, o.PerNamespace = 1, 1 })
	gaveUp, cancel := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() {
		_, err := f.Fetch(gaveUp, releaseIn("a", reg, "held-1"), inputsOf())
		first <- err
	}()
	<-held
	cancel()
	require.Error(t, <-first)
	waitGauge(t, "running", 1)

	next := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, releaseIn("b", reg, "free"), inputsOf())
		next <- err
	}()
	waitGauge(t, "waiting", 1)
	close(release)
	require.NoError(t, <-next)
	waitGauge(t, "running", 0)
}

// One namespace whose registry does not answer holds its share of the
// slots; another namespace's Releases keep fetching meanwhile.
func TestSlotsPerNamespace(t *testing.T) {
	RegisterMetrics()
	ctx := context.Background()
	reg, held, release := heldRegistry(t)
	f, _ := newFetcher(t, func(o *Options) { o.Concurrency, o.PerNamespace = 3, 2 })
	stuck := make(chan error, 3)
	for _, tag := range []string{"held-1", "held-2", "held-3"} {
		go func() {
			_, err := f.Fetch(ctx, releaseIn("slow", reg, tag), inputsOf())
			stuck <- err
		}()
	}
	<-held
	<-held
	waitGauge(t, "waiting", 1)

	out, err := f.Fetch(ctx, releaseIn("other", reg, "free"), inputsOf())
	require.NoError(t, err, "another namespace fetches while the slow one holds its share")
	assert.Equal(t, chartTGZ, out.Chart)
	assert.Empty(t, stuck, "the slow namespace's requests are still held")

	close(release)
	for range 3 {
		require.NoError(t, <-stuck)
	}
}

// A request that holds its slot and runs is shared by the callers of every
// namespace: a fleet spread over namespaces sends one HEAD, not one per
// namespace. One still waiting for its namespace's slot is not: a caller
// of another namespace goes on without it.
func TestSharedAcrossNamespacesOnceRunning(t *testing.T) {
	RegisterMetrics()
	ctx := context.Background()
	reg, held, release := heldRegistry(t)
	f, _ := newFetcher(t, func(o *Options) { o.Concurrency, o.PerNamespace = 4, 1 })
	fetched := make(chan error, 3)
	go func() {
		_, err := f.Fetch(ctx, releaseIn("a", reg, "held-1"), inputsOf())
		fetched <- err
	}()
	<-held
	for _, ns := range []string{"b", "c"} {
		go func() {
			_, err := f.Fetch(ctx, releaseIn(ns, reg, "held-1"), inputsOf())
			fetched <- err
		}()
	}
	// a's request for free waits for a's only slot; b's goes on.
	waiting := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, releaseIn("a", reg, "free"), inputsOf())
		waiting <- err
	}()
	waitGauge(t, "waiting", 1)
	_, err := f.Fetch(ctx, releaseIn("b", reg, "free"), inputsOf())
	require.NoError(t, err, "b did not wait for a's slot")
	assert.Empty(t, waiting)

	close(release)
	for range 3 {
		require.NoError(t, <-fetched)
	}
	require.NoError(t, <-waiting)
	assert.Empty(t, held, "b and c joined a's HEAD of held-1")
	waitGauge(t, "running", 0)
}

// A request that finds no slot of its namespace within the fetch timeout
// is a FetchTimeout that names the flag to raise.
func TestSlotsTimeoutNamesTheFlag(t *testing.T) {
	f, _ := newFetcher(t, func(o *Options) { o.Concurrency, o.PerNamespace, o.Timeout = 2, 1, 300*time.Millisecond })
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	go func() {
		_, _ = f.shared(context.Background(), "a", "k1", func(context.Context) (any, error) {
			close(started)
			<-release
			return nil, nil
		})
	}()
	<-started
	_, err := f.shared(context.Background(), "a", "k2", func(context.Context) (any, error) { return nil, nil })
	ferr, ok := failure.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, sourcefailure.ReasonFetchTimeout, ferr.Reason)
	assert.Contains(t, ferr.Message, "fetches of namespace a running now (--max-concurrent-fetches-per-namespace)")
}
