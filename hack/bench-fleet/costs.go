//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// costs is kube-apiserver's CPU per request of each kind a round sends,
// measured with nothing else running, in milliseconds.
type costs struct {
	// get is a GET of one of a Release's objects (their mix: 14
	// ConfigMaps, 3 Services, 3 Deployments), as the Release's identity.
	get float64
	// listItem is an item of a metadata-only LIST of the namespace's
	// ConfigMaps, paged like cluster.Snapshots, as the Release's identity
	// (its share of the LIST).
	listItem float64
	// fullListItem is an item of a LIST of whole objects of the same
	// ConfigMaps (what cluster.Reader.ReadAhead sends).
	fullListItem float64
	// patch is a merge patch of a Release's spec (the benchmark's trigger
	// of the spec-changed round); apply is a server-side apply of a
	// Release's status conditions (what the observer writes).
	patch, apply float64
}

// measureCosts measures costs on the fleet, convoy-apiserver stopped. The
// CPU kube-apiserver spends when idle over the same time is taken off.
func (f *fleet) measureCosts(ctx context.Context) (costs, error) {
	var c costs
	cfg := f.cp.AdminConfig()
	cfg.QPS, cfg.Burst = 2000, 4000
	// As convoy-apiserver reads: impersonating the Release's identity.
	cfg.Impersonate.UserName = "system:serviceaccount:" + namespace + ":default"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return c, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return c, err
	}
	idle := f.idleRate()

	rels := min(f.n, 250)
	if c.get, err = f.cpuPer(idle, rels*objectsPerRel, func() error {
		return parallel(rels, func(i int) error {
			for _, o := range objects(i) {
				if _, err := dyn.Resource(resources[o.GetKind()]).Namespace(namespace).Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}); err != nil {
		return c, err
	}

	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if c.listItem, err = f.listCost(idle, "metadata-only", func(opts metav1.ListOptions) (int, string, error) {
		page, err := meta.Resource(configMaps).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return 0, "", err
		}
		return len(page.Items), page.Continue, nil
	}); err != nil {
		return c, err
	}
	if c.fullListItem, err = f.listCost(idle, "whole-object", func(opts metav1.ListOptions) (int, string, error) {
		page, err := dyn.Resource(configMaps).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return 0, "", err
		}
		return len(page.Items), page.GetContinue(), nil
	}); err != nil {
		return c, err
	}

	writes := min(f.n, 1000)
	if c.patch, err = f.cpuPer(idle, writes, func() error {
		return parallel(writes, func(i int) error {
			_, err := f.convoy.ConvoyV1alpha1().Releases(namespace).Patch(ctx, fmt.Sprintf("r%d", i), types.MergePatchType,
				[]byte(`{"spec":{"syncPolicy":{"interval":"2h"}}}`), metav1.PatchOptions{})
			return err
		})
	}); err != nil {
		return c, err
	}
	releases := schema.GroupVersionResource{Group: convoyv1alpha1.GroupName, Version: "v1alpha1", Resource: "releases"}
	now := time.Now().UTC().Format(time.RFC3339)
	if c.apply, err = f.cpuPer(idle, writes, func() error {
		return parallel(writes, func(i int) error {
			name := fmt.Sprintf("r%d", i)
			status := fmt.Sprintf(`{"apiVersion":"%s","kind":"Release","metadata":{"name":%q,"namespace":%q},"status":{"conditions":[`+
				`{"type":"BenchInSync","status":"True","reason":"InSync","message":"every object matches","observedGeneration":2,"lastTransitionTime":%q},`+
				`{"type":"BenchHealthy","status":"True","reason":"Healthy","message":"every object is healthy","observedGeneration":2,"lastTransitionTime":%q}]}}`,
				convoyv1alpha1.SchemeGroupVersion, name, namespace, now, now)
			_, err := f.dyn.Resource(releases).Namespace(namespace).Patch(ctx, name, types.ApplyPatchType, []byte(status),
				metav1.PatchOptions{FieldManager: "bench-fleet"}, "status")
			return err
		})
	}); err != nil {
		return c, err
	}
	return c, nil
}

// listCost is kube-apiserver's CPU milliseconds per item of the LISTs list
// sends (pages of 1,000), less the idle rate: at least 10 LISTs and 500,000
// items, since a LIST of 15,000 items costs little more than the CPU ticks
// (10 ms) that measure it.
func (f *fleet) listCost(idle float64, what string, list func(metav1.ListOptions) (int, string, error)) (float64, error) {
	var items atomic.Int64
	cpu, took, err := f.cpuOf(func() error {
		for i := 0; i < 10 || items.Load() < 500_000; i++ {
			opts := metav1.ListOptions{Limit: 1000}
			for {
				n, next, err := list(opts)
				if err != nil {
					return err
				}
				items.Add(int64(n))
				if opts.Continue = next; opts.Continue == "" {
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "bench-fleet: %s LISTs: %d items in %s, %.2f s of kube-apiserver CPU (idle: %.3f/s)\n",
		what, items.Load(), took.Round(time.Millisecond), cpu, idle)
	return 1000 * max(cpu-idle*took.Seconds(), 0) / float64(items.Load()), nil // ms per item
}

// idleRate is kube-apiserver's CPU seconds per second with nothing sent.
func (f *fleet) idleRate() float64 {
	const d = 5 * time.Second
	before := controlplane.CPUSeconds(f.cp.KubeAPIServerPID())
	time.Sleep(d)
	return (controlplane.CPUSeconds(f.cp.KubeAPIServerPID()) - before) / d.Seconds()
}

// cpuOf runs do and returns kube-apiserver's CPU seconds meanwhile, and how
// long it took.
func (f *fleet) cpuOf(do func() error) (float64, time.Duration, error) {
	pid := f.cp.KubeAPIServerPID()
	before, began := controlplane.CPUSeconds(pid), time.Now()
	err := do()
	return controlplane.CPUSeconds(pid) - before, time.Since(began), err
}

// cpuPer is kube-apiserver's CPU milliseconds per request of do, which sends
// n, less the idle rate.
func (f *fleet) cpuPer(idle float64, n int, do func() error) (float64, error) {
	cpu, took, err := f.cpuOf(do)
	fmt.Fprintf(os.Stderr, "bench-fleet: %d requests in %s, %.2f s of kube-apiserver CPU (idle: %.3f/s)\n", n, took.Round(time.Millisecond), cpu, idle)
	return 1000 * max(cpu-idle*took.Seconds(), 0) / float64(n), err
}

// print writes the costs, and what they say of the spec-changed rounds:
// their kube-apiserver CPU less that of their writes (the benchmark's spec
// patches and the observer's status applies, which no cache can save).
func (c costs) print(rows []row) {
	fmt.Printf("\nkube-apiserver CPU per request, measured after the rounds with nothing else running: a GET of an object %.2f ms, "+
		"a metadata-only LIST %.1f ms per 1,000 items (one GET costs as much as %.0f listed items; convoy-apiserver assumes %d), "+
		"a LIST of whole objects %.1f ms per 1,000 items (one GET costs as much as %.0f; the read-ahead assumes %d), "+
		"a spec patch %.2f ms, a status apply %.2f ms.\n",
		c.get, c.listItem*1000, c.get/c.listItem, cluster.ListCostRatio,
		c.fullListItem*1000, c.get/c.fullListItem, cluster.FullListCostRatio, c.patch, c.apply)
	for _, r := range rows {
		if r.patches == 0 {
			continue
		}
		// The costs are measured alone: under the load of a round they
		// differ, and on a small fleet the estimate can exceed the round.
		writes := float64(r.patches)*c.patch + r.own*c.apply
		fmt.Printf("%s: %.1f s of kube-apiserver CPU, of which about %.1f s for its %d spec patches and %.0f own-cluster writes; %.1f s without them.\n",
			r.name, r.kasCPU, writes/1000, r.patches, r.own, max(r.kasCPU-writes/1000, 0))
	}
}
