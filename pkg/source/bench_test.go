package source

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
)

// fleetSize is the Releases of one round of BenchmarkFleetFetch, each in a
// namespace of its own, all of one chart tag.
const fleetSize = 1000

// BenchmarkFleetFetch: one op is one round of the loops over a fleet of
// fleetSize Releases of one chart tag, fetched by 8 workers (the default
// --max-concurrent-fetches), against a registry on 127.0.0.1. It reports
// the registry's requests per round and per Release, and the blob
// downloads per round:
//
//   - peer=helm-pull: what a user would otherwise run per Release, helm's
//     registry client pulling the chart (helm pull, helm template oci://);
//   - no-cache: --source-cache-bytes<0 (or --cache=false);
//   - cache/rounds-apart: the caches on, rounds further apart than
//     --source-resolve-max-age (the steady state of the loops: one HEAD per
//     tag and credentials, no download);
//   - cache/within-max-age: rounds closer than that (no request).
//
// A round is every Release's Fetch: what a render needs when the render
// cache misses. When it hits, the loops call Resolve alone, which costs at
// most the HEAD.
func BenchmarkFleetFetch(b *testing.B) {
	reg, err := ociregistry.Start(ociregistry.Options{})
	require.NoError(b, err)
	defer reg.Close()
	tgz, err := ociregistry.TarGz(map[string]string{
		"web/Chart.yaml":          "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"web/values.yaml":         "replicas: 2\n",
		"web/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {r: {{ .Values.replicas | quote }}}\n",
		"web/templates/more.yaml": strings.Repeat("# padding of a real chart's templates\n", 400),
	})
	require.NoError(b, err)
	ctx := context.Background()
	_, err = reg.PushChart(ctx, "charts/web", "1.0.0", tgz, []byte(`{"apiVersion":"v2","name":"web","version":"1.0.0"}`))
	require.NoError(b, err)

	releases := make([]*convoyv1alpha1.Release, fleetSize)
	for i := range releases {
		releases[i] = &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "web"},
			Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{
				URL: reg.URL("charts/web"), Tag: "1.0.0"}}}}
	}
	inputs := inputsOf()

	// round runs fetch for each Release, 8 at once.
	round := func(b *testing.B, fetch func(*convoyv1alpha1.Release) error) {
		work := make(chan *convoyv1alpha1.Release)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for range DefaultConcurrency {
			wg.Go(func() {
				for r := range work {
					if err := fetch(r); err != nil {
						mu.Lock()
						first = err
						mu.Unlock()
					}
				}
			})
		}
		for _, r := range releases {
			work <- r
		}
		close(work)
		wg.Wait()
		require.NoError(b, first)
	}
	report := func(b *testing.B, requests []ociregistry.Request) {
		rounds := float64(b.N)
		b.ReportMetric(float64(len(requests))/rounds, "requests/round")
		b.ReportMetric(float64(len(requests))/rounds/fleetSize, "requests/release")
		b.ReportMetric(float64(count(requests, http.MethodGet, "/blobs/"))/rounds, "blob-GETs/round")
	}

	b.Run("peer=helm-pull", func(b *testing.B) {
		client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP())
		require.NoError(b, err)
		ref := strings.TrimPrefix(reg.URL("charts/web"), "oci://") + ":1.0.0"
		reg.Requests()
		b.ResetTimer()
		for range b.N {
			round(b, func(*convoyv1alpha1.Release) error {
				_, err := client.Pull(ref)
				return err
			})
		}
		b.StopTimer()
		report(b, reg.Requests())
	})

	for _, tc := range []struct {
		name       string
		cacheBytes int
		step       time.Duration
	}{
		{"no-cache", -1, 0},
		{"cache/rounds-apart", 0, DefaultResolveMaxAge + time.Second},
		{"cache/within-max-age", 0, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			clk := clocktesting.NewFakePassiveClock(time.Now())
			f := NewFetcher(Options{Policy: egress.AddressPolicy{AllowLoopback: true}, CacheBytes: tc.cacheBytes, Clock: clk})
			fetch := func(r *convoyv1alpha1.Release) error {
				_, err := f.Fetch(ctx, r, inputs)
				return err
			}
			round(b, fetch) // the first round fills the caches
			reg.Requests()
			b.ResetTimer()
			for range b.N {
				clk.SetTime(clk.Now().Add(tc.step))
				round(b, fetch)
			}
			b.StopTimer()
			report(b, reg.Requests())
		})
	}
}
