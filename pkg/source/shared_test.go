package source

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Releases of one tag fetched at once share the requests: one HEAD when
// the resolution expired, one download when the cache is cold; with the
// caches off each sends its own.
func TestFetchesShareRequests(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	_, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{}`))
	require.NoError(t, err)
	release := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1"})
	const fleet = 40
	fetchAll := func(f *Fetcher) {
		var wg sync.WaitGroup
		for range fleet {
			wg.Go(func() {
				_, err := f.Fetch(ctx, release, inputsOf())
				assert.NoError(t, err)
			})
		}
		wg.Wait()
	}
	for _, tc := range []struct {
		name         string
		cacheBytes   int
		heads, blobs int // per round
		blobsWarm    int // the second round
	}{
		{"caches on", 0, 1, 1, 0},
		{"caches off", -1, fleet, fleet, fleet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, clk := newFetcher(t, func(o *Options) { o.CacheBytes, o.Concurrency = tc.cacheBytes, fleet })
			reg.Requests()
			fetchAll(f)
			cold := reg.Requests()
			assert.Equal(t, tc.heads, count(cold, http.MethodHead, "/manifests/1"), "%v", cold)
			assert.Equal(t, tc.blobs, count(cold, http.MethodGet, "/blobs/"), "%v", cold)

			clk.SetTime(clk.Now().Add(2 * DefaultResolveMaxAge))
			fetchAll(f)
			warm := reg.Requests()
			assert.Equal(t, tc.heads, count(warm, http.MethodHead, "/manifests/1"), "%v", warm)
			assert.Equal(t, tc.blobsWarm, count(warm, http.MethodGet, "/blobs/"), "%v", warm)
		})
	}
}

// A caller that gives up does not fail those waiting for the same request:
// the request runs on, within the fetch timeout.
func TestSharedRequestOutlivesItsFirstCaller(t *testing.T) {
	ctx := context.Background()
	asked, release := make(chan struct{}, 4), make(chan struct{})
	reg := startRegistry(t, ociregistry.Options{Hook: func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			asked <- struct{}{}
			<-release
		}
		return false
	}})
	_, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{}`))
	require.NoError(t, err)
	src := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1"})
	f, _ := newFetcher(t)
	reg.Requests()

	firstCtx, cancelFirst := context.WithCancel(ctx)
	firstErr := make(chan error, 1)
	go func() {
		_, err := f.Fetch(firstCtx, src, inputsOf())
		firstErr <- err
	}()
	<-asked
	second := make(chan *Source, 1)
	go func() {
		out, err := f.Fetch(ctx, src, inputsOf())
		assert.NoError(t, err)
		second <- out
	}()
	// The second joins the download before the first gives up.
	require.Eventually(t, func() bool { return f.flights.Joined() == 1 }, 20*time.Second, time.Millisecond)
	cancelFirst()
	err = <-firstErr
	require.Error(t, err)
	close(release)
	out := <-second
	require.NotNil(t, out)
	assert.Equal(t, chartTGZ, out.Chart)
	assert.Equal(t, 1, count(reg.Requests(), http.MethodGet, "/blobs/"), "one download for both")
}

// A panic in a shared request is that fetch's InternalError.
func TestSharedRequestPanics(t *testing.T) {
	f, _ := newFetcher(t)
	_, err := f.shared(context.Background(), "shop", "k", func(context.Context) (any, error) { panic("boom") })
	ferr, ok := failure.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, failure.ReasonInternalError, ferr.Reason)
	assert.Contains(t, ferr.Message, "boom")
}
