package render

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// BenchmarkRevisionMonorepo renders 100 Releases of one Git monorepo (an
// overlay of 10 objects each) at a pull request's branch, whose commit
// changes one app, as `kubectl convoy diff --revision` asks the server to
// (the server-side compare is not in it): "convoy" starts from the caches
// the drift loop left at main (the render of each Release at main, untimed)
// and reports the ref listings and fetches that reached the server and the
// kustomize builds. "checkout" is the peer a CI job runs without convoy: one
// `git clone --depth 1` of the branch with git's own client, then a build of
// every overlay (krusty in process, as `kubectl kustomize` builds, without
// the cost of starting it 100 times).
func BenchmarkRevisionMonorepo(b *testing.B) {
	const apps = 100
	root := b.TempDir()
	server, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(server.Close)
	repo, err := gitserver.InitBare(root, "mono.git")
	if err != nil {
		b.Fatal(err)
	}
	tree := func(changed string) gitserver.Tree {
		files := map[string]string{}
		for a := range apps {
			resources := ""
			for i := range 10 {
				color := "blue"
				if fmt.Sprintf("app-%d", a) == changed {
					color = "green"
				}
				files[fmt.Sprintf("apps/app-%d/base/cm-%d.yaml", a, i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {app: app-%d, color: %s}\n", i, a, color)
				resources += fmt.Sprintf("- cm-%d.yaml\n", i)
			}
			files[fmt.Sprintf("apps/app-%d/base/kustomization.yaml", a)] = "resources:\n" + resources
			files[fmt.Sprintf("apps/app-%d/prod/kustomization.yaml", a)] = "resources: [../base]\nnamePrefix: prod-\n"
		}
		return gitserver.Tree{Files: files}
	}
	if _, err := repo.Commit("main", tree(""), "main"); err != nil {
		b.Fatal(err)
	}
	if _, err := repo.Commit("pr", tree("app-7"), "change app-7"); err != nil {
		b.Fatal(err)
	}
	url := server.RepoURL("mono.git")
	fleet := make([]*convoyv1alpha1.Release, apps)
	for i := range fleet {
		fleet[i] = &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("app-%d", i)},
			Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{
				URL: url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: fmt.Sprintf("apps/app-%d/prod", i)}}}}
	}
	renderAll := func(b *testing.B, renderer *Renderer, ctx context.Context) {
		for _, rel := range fleet {
			out, err := renderer.Render(ctx, rel)
			if err != nil {
				b.Fatal(err)
			}
			if len(out.Objects) != 10 {
				b.Fatalf("%d objects", len(out.Objects))
			}
		}
	}

	b.Run("convoy", func(b *testing.B) {
		var listings, fetches, builds, rounds int
		for b.Loop() {
			b.StopTimer()
			runner := &countingRunner{}
			clk := clocktesting.NewFakePassiveClock(time.Now())
			engine := NewEngine(source.NewFetcher(source.Options{Policy: egress.AddressPolicy{AllowLoopback: true}, Clock: clk}), runner, Limits{}).
				WithBuildCache(DefaultBuildCacheBytes, time.Hour, clock.RealClock{})
			renderer := engine.Renderer(nil, MapperScoper{Mapper: testMapper()})
			renderAll(b, renderer, context.Background()) // the drift loop's renders at main
			clk.SetTime(clk.Now().Add(time.Second))
			server.Reset()
			built := runner.builds.Load()
			b.StartTimer()
			renderAll(b, renderer, revision.With(context.Background(), "pr"))
			b.StopTimer()
			listings += server.Listings()
			fetches += server.Fetches()
			builds += int(runner.builds.Load() - built)
			rounds++
			b.StartTimer()
		}
		b.ReportMetric(float64(listings)/float64(rounds), "listings/op")
		b.ReportMetric(float64(fetches)/float64(rounds), "fetches/op")
		b.ReportMetric(float64(builds)/float64(rounds), "builds/op")
	})

	b.Run("checkout", func(b *testing.B) {
		git, err := exec.LookPath("git")
		if err != nil {
			b.Skip("no git")
		}
		var listings, fetches, rounds int
		for b.Loop() {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "mono")
			server.Reset()
			b.StartTimer()
			clone := exec.Command(git, "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", "pr", url, dir)
			clone.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.TempDir())
			if out, err := clone.CombinedOutput(); err != nil {
				b.Fatalf("git clone: %v: %s", err, out)
			}
			for i := range fleet {
				files := map[string][]byte{}
				appDir := fmt.Sprintf("apps/app-%d", i)
				err := filepath.WalkDir(filepath.Join(dir, appDir), func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					rel, err := filepath.Rel(dir, p)
					if err != nil {
						return err
					}
					files[filepath.ToSlash(rel)], err = os.ReadFile(p)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := kustomize.Build(appDir, files, appDir+"/prod"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			listings += server.Listings()
			fetches += server.Fetches()
			rounds++
			b.StartTimer()
		}
		b.ReportMetric(float64(listings)/float64(rounds), "listings/op")
		b.ReportMetric(float64(fetches)/float64(rounds), "fetches/op")
		b.ReportMetric(apps, "builds/op")
	})
}
