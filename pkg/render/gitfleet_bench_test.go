package render

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// BenchmarkGitFleet renders 1,000 Releases whose sources are 5 Git
// repositories on 127.0.0.1 (git http-backend), each a monorepo of 4
// overlays of 50 objects, as the drift loop's rounds do: "cold" (the first
// round), "unchanged" (nothing moved), "elsewhere" (each repository got a
// commit that changes no file any overlay reads). It reports, per round,
// the ref listings and fetches that reached the servers and the
// kustomizations built, besides the time of a round.
func BenchmarkGitFleet(b *testing.B) {
	const releases, repos, apps = 1000, 5, 4
	root := b.TempDir()
	server, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(server.Close)
	var repositories []*gitserver.Repo
	tree := func(repo, round int) gitserver.Tree {
		files := map[string]string{"docs/round.txt": fmt.Sprint(round)}
		for a := range apps {
			for i := range 50 {
				files[fmt.Sprintf("apps/app-%d/base/cm-%d.yaml", a, i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {app: app-%d, repo: repo-%d}\n", i, a, repo)
			}
			files[fmt.Sprintf("apps/app-%d/base/kustomization.yaml", a)] = "resources:\n" + func() string {
				s := ""
				for i := range 50 {
					s += fmt.Sprintf("- cm-%d.yaml\n", i)
				}
				return s
			}()
			files[fmt.Sprintf("apps/app-%d/prod/kustomization.yaml", a)] = "resources: [../base]\nnamePrefix: prod-\nlabels: [{pairs: {env: prod}}]\n"
		}
		return gitserver.Tree{Files: files}
	}
	for r := range repos {
		repo, err := gitserver.InitBare(root, fmt.Sprintf("repo-%d.git", r))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := repo.Commit("main", tree(r, 0), "first"); err != nil {
			b.Fatal(err)
		}
		repositories = append(repositories, repo)
	}
	runner := &countingRunner{}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	engine := NewEngine(source.NewFetcher(source.Options{Policy: egress.AddressPolicy{AllowLoopback: true}, Clock: clk}), runner, Limits{}).
		WithBuildCache(DefaultBuildCacheBytes, time.Hour, clock.RealClock{})
	renderer := engine.Renderer(nil, MapperScoper{Mapper: testMapper()})
	fleet := make([]*convoyv1alpha1.Release, releases)
	for i := range fleet {
		fleet[i] = &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "app"},
			Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{
				URL: server.RepoURL(fmt.Sprintf("repo-%d.git", i%repos)), Ref: convoyv1alpha1.GitReference{Branch: "main"},
				Path: fmt.Sprintf("apps/app-%d/prod", (i/repos)%apps)}}}}
	}
	round := func(b *testing.B) {
		for _, rel := range fleet {
			if _, err := renderer.ResolveSource(context.Background(), rel); err != nil {
				b.Fatal(err)
			}
			out, err := renderer.Render(context.Background(), rel)
			if err != nil {
				b.Fatal(err)
			}
			if len(out.Objects) != 50 {
				b.Fatalf("%d objects", len(out.Objects))
			}
		}
	}
	report := func(b *testing.B, rounds int, listings, fetches, builds int) {
		b.ReportMetric(float64(listings)/float64(rounds), "listings/round")
		b.ReportMetric(float64(fetches)/float64(rounds), "fetches/round")
		b.ReportMetric(float64(builds)/float64(rounds), "builds/round")
	}
	measure := func(name string, before func(int)) {
		b.Run(name, func(b *testing.B) {
			rounds := 0
			server.Reset()
			built := runner.builds.Load()
			for b.Loop() {
				b.StopTimer()
				before(rounds)
				b.StartTimer()
				round(b)
				rounds++
			}
			report(b, rounds, server.Listings(), server.Fetches(), int(runner.builds.Load()-built))
		})
	}
	commits := 0
	// Every round of "cold" starts with empty caches: a new Fetcher and
	// build cache, as after a restart.
	measure("cold", func(int) {
		clk = clocktesting.NewFakePassiveClock(time.Now())
		engine.sources = source.NewFetcher(source.Options{Policy: egress.AddressPolicy{AllowLoopback: true}, Clock: clk})
		engine.WithBuildCache(DefaultBuildCacheBytes, time.Hour, clock.RealClock{})
	})
	// Within the resolve max age, as most rounds of a fleet are (the
	// drift loop's interval is longer than a minute only on request).
	measure("unchanged", func(int) {})
	measure("elsewhere", func(int) {
		// A commit that changes docs/ only, and a fresh listing to see it.
		commits++
		for r, repo := range repositories {
			if _, err := repo.Commit("main", tree(r, commits), "docs"); err != nil {
				b.Fatal(err)
			}
		}
		clk.SetTime(clk.Now().Add(source.DefaultResolveMaxAge + time.Second))
	})
}
