package source

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// pass is a Release's passes as the drift loop runs them: each with the
// Release's Spot, the next one when the Spot wakes it.
type pass struct {
	spot  *park.Spot
	woken chan struct{}
}

func newPass() *pass {
	p := &pass{woken: make(chan struct{}, 8)}
	p.spot = park.NewSpot(100*time.Millisecond, func() { p.woken <- struct{}{} })
	return p
}

// fetch runs a pass's fetch of release once.
func (p *pass) fetch(f *Fetcher, release *convoyv1alpha1.Release) (*Source, error) {
	p.spot.Begin()
	return f.Fetch(park.WithSpot(context.Background(), p.spot), release, inputsOf())
}

// untilDone runs the passes that the wakes start until one does not park,
// and returns its outcome.
func (p *pass) untilDone(t *testing.T, f *Fetcher, release *convoyv1alpha1.Release) (*Source, error) {
	t.Helper()
	for {
		select {
		case <-p.woken:
		case <-time.After(time.Minute):
			require.FailNow(t, "the parked pass was not woken")
		}
		out, err := p.fetch(f, release)
		if errors.Is(err, park.ErrParked) {
			continue
		}
		p.spot.End()
		return out, err
	}
}

// A pass waits for neither a registry that does not answer nor a slot of its
// namespace: it parks, and the pass its wake starts gets what the request
// got, the chart or the failure, without asking again. With the caches off
// too.
func TestFetchParks(t *testing.T) {
	RegisterMetrics()
	for _, tc := range []struct {
		name       string
		cacheBytes int
	}{{"caches on", 0}, {"caches off", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			reg, held, release := heldRegistry(t)
			f, _ := newFetcher(t, func(o *Options) { o.CacheBytes, o.Concurrency, o.PerNamespace = tc.cacheBytes, 4, 1 })

			first, second := newPass(), newPass()
			_, err := first.fetch(f, releaseIn("a", reg, "held-1"))
			require.ErrorIs(t, err, park.ErrParked, "the registry holds the HEAD")
			<-held
			_, err = second.fetch(f, releaseIn("a", reg, "free"))
			require.ErrorIs(t, err, park.ErrParked, "namespace a's only slot is held")
			waitGauge(t, "waiting", 1)

			out, err := f.Fetch(context.Background(), releaseIn("b", reg, "free"), inputsOf())
			require.NoError(t, err, "another namespace fetches meanwhile")
			assert.Equal(t, chartTGZ, out.Chart)

			close(release)
			for p, tag := range map[*pass]string{first: "held-1", second: "free"} {
				out, err := p.untilDone(t, f, releaseIn("a", reg, tag))
				require.NoError(t, err)
				assert.Equal(t, chartTGZ, out.Chart)
			}
			waitGauge(t, "running", 0)
		})
	}
}

// A request that ends at the fetch timeout wakes its pass, which reports
// the timeout: a parked pass is not parked again on the same request.
func TestParkedFetchTimesOut(t *testing.T) {
	RegisterMetrics()
	reg, held, release := heldRegistry(t)
	t.Cleanup(func() { close(release) })
	f, _ := newFetcher(t, func(o *Options) { o.Timeout = 500 * time.Millisecond })
	p := newPass()
	_, err := p.fetch(f, releaseIn("a", reg, "held-1"))
	require.ErrorIs(t, err, park.ErrParked)
	<-held
	_, err = p.untilDone(t, f, releaseIn("a", reg, "held-1"))
	ferr, ok := failure.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, sourcefailure.ReasonFetchTimeout, ferr.Reason)
	assert.Equal(t, 1, count(reg.Requests(), http.MethodHead, "/manifests/held-1"), "asked once")
}
