package source

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
)

// A refresh (WithFreshAfter) resolves a tag again within ResolveMaxAge,
// once: another refresh of the same time, or of an earlier one, takes
// that resolution; a fetch without a refresh reads the cache as before.
func TestFreshAfter(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	_, err := reg.PushChart(ctx, "charts/web", "stable", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	f, clk := newFetcher(t, func(o *Options) { o.ResolveMaxAge = 10 * time.Minute })
	rel := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "stable"})
	first, err := f.Fetch(ctx, rel, inputsOf())
	require.NoError(t, err)

	moved, err := reg.PushChart(ctx, "charts/web", "stable", []byte("chart two"), []byte(`{"name":"web","version":"2.0.0"}`))
	require.NoError(t, err)
	clk.SetTime(clk.Now().Add(time.Minute))
	reg.Requests()
	again, err := f.Fetch(ctx, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, first.Resolved.Digest, again.Resolved.Digest, "within the max age, the tag is not asked again")
	assert.Zero(t, count(reg.Requests(), http.MethodHead, "/manifests/stable"))

	requested := clk.Now()
	clk.SetTime(clk.Now().Add(time.Second))
	fresh, err := f.Fetch(WithFreshAfter(ctx, requested), rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, moved, fresh.Resolved.Digest, "a refresh resolves the tag again")
	assert.Equal(t, 1, count(reg.Requests(), http.MethodHead, "/manifests/stable"))

	for _, at := range []time.Time{requested, requested.Add(-time.Hour), requested.Add(time.Second)} {
		_, err = f.Fetch(WithFreshAfter(ctx, at), rel, inputsOf())
		require.NoError(t, err)
	}
	plain, err := f.Fetch(ctx, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, moved, plain.Resolved.Digest, "what the refresh read serves the others")
	assert.Zero(t, count(reg.Requests(), http.MethodHead, "/manifests/stable"), "refreshes requested before the read share it")

	// A refresh dated in the future is taken as now.
	clk.SetTime(clk.Now().Add(time.Second))
	_, err = f.Fetch(WithFreshAfter(ctx, clk.Now().Add(time.Hour)), rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, 1, count(reg.Requests(), http.MethodHead, "/manifests/stable"))
	clk.SetTime(clk.Now().Add(time.Second))
	_, err = f.Fetch(WithFreshAfter(ctx, clk.Now().Add(-2*time.Second)), rel, inputsOf())
	require.NoError(t, err)
	assert.Zero(t, count(reg.Requests(), http.MethodHead, "/manifests/stable"), "the future one was read at its now")
}
