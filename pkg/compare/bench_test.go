package compare

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
)

// preparedClient answers from prepared objects, without copies or locks,
// so that the benchmark measures the engine.
type preparedClient struct {
	live, dryRun map[string]*unstructured.Unstructured
}

func (p *preparedClient) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return p.live[fakeKey(gvk, namespace, name)], nil
}

func (p *preparedClient) DryRunApply(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return p.dryRun[keyOf(obj)], nil
}

func (*preparedClient) Who() string         { return "" }
func (*preparedClient) ClusterName() string { return "" }
func (*preparedClient) ResourceVersion(context.Context, schema.GroupVersionKind, string, string) (string, bool, bool) {
	return "", false, false
}
func (*preparedClient) ReadAhead(context.Context, []*unstructured.Unstructured) {}

// BenchmarkDiff compares 500 Deployments (two containers with ports, env
// and args each; one in ten modified) with 8 workers.
func BenchmarkDiff(b *testing.B) {
	const objects = 500
	p := &preparedClient{live: map[string]*unstructured.Unstructured{}, dryRun: map[string]*unstructured.Unstructured{}}
	desired := make([]*unstructured.Unstructured, objects)
	for i := range desired {
		d := deployment("shop", fmt.Sprintf("web-%03d", i), 3, "shop:2")
		desired[i] = d
		live := liveOf(d)
		if i%10 == 0 {
			live = liveOf(deployment("shop", d.GetName(), 2, "shop:1"))
		}
		p.live[keyOf(d)] = live
		p.dryRun[keyOf(d)] = ssaImitation(d, live)
	}
	e := NewEngine(redact.NewWithKey([]byte("bench")), 8)
	ctx := context.Background()

	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := e.Compare(ctx, p, desired)
		if res.Verdict != subresourcesv1alpha1.DiffDrifted || len(res.Objects) != objects {
			b.Fatalf("unexpected result %s: %s", res.Verdict, res.Message)
		}
	}
}

// BenchmarkResultCacheMemory reports the live heap per kept compare: a
// fleet of 5,000 Releases of 20 objects keeps 100,000 of them.
func BenchmarkResultCacheMemory(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := NewResultCache(DefaultCacheMaxAge, clock.RealClock{})
		for i := range n {
			// Strings of their own, as a decoded render has them.
			ns, name := strings.Clone("shop"), fmt.Sprintf("release-%05d-config-%02d", i/20, i%20)
			gvk := schema.GroupVersionKind{Version: strings.Clone("v1"), Kind: strings.Clone("ConfigMap")}
			d := subresourcesv1alpha1.ObjectDiff{Version: gvk.Version, Kind: gvk.Kind, Namespace: ns, Name: name, Status: subresourcesv1alpha1.ObjectInSync}
			c.put(resultKeyOf("system:serviceaccount:shop:deployer", "", gvk, ns, name), [32]byte{byte(i)}, strconv.Itoa(1_000_000+i), d)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/entry")
		runtime.KeepAlive(c)
	}
}
