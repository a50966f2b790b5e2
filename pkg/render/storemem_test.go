package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// bombRender is a stored render of one ConfigMap whose one value is a
// string of n bytes of 'a', gzip'd: 32 MiB is a Secret of ~33 KiB.
func bombRender(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write([]byte(`[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"`))
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("a", 64<<10))
	for left := n; left > 0; left -= len(chunk) {
		_, err := zw.Write(chunk[:min(left, len(chunk))])
		require.NoError(t, err)
	}
	_, err = zw.Write([]byte(`"}}]`))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// peakHeapAdded runs run and returns the most the Go heap (HeapAlloc:
// live objects and garbage not yet collected) held above what it held
// before, after a GC, sampled by runtime.ReadMemStats every ~0.5 ms and once
// at the end: a sample may miss the very top, never add to it. run runs
// with GOMAXPROCS at procs, so that that many decodes can run at once
// whatever the machine's cores, and a GC percent of 10, so that HeapAlloc
// follows what is live rather than garbage awaiting a collection.
func peakHeapAdded(procs int, run func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	run()
	close(done)
	<-sampled
	runtime.ReadMemStats(&ms)
	return max(peak, ms.HeapAlloc) - base
}

// TestStoredRenderBombMemory: a stored render of one string of almost
// 32 MiB (within --max-render-bytes), a gzip'd Secret of ~33 KiB, read
// once and by ten requests at once (on ten Ps): the peak the heap adds
// (peakHeapAdded) stays a few MiB per decode, as the string is refused past
// MaxStoredString while it is streamed, and at most MaxStoredDecodes
// decodes run at once. Without the bound of strings one read added 96 MiB
// and ten ~1.1 GB; with it, one adds 7 MiB, and ten 16-24 MiB, or 27-54
// without the semaphore (docs/operators/sizing.md; TestStoreDecodesWait
// tells the semaphore's absence for sure).
func TestStoredRenderBombMemory(t *testing.T) {
	engine := testEngine(Limits{})
	data := bombRender(t, engine.Limits().MaxBytes-256)
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName("web", "0123456789abcdef"), Namespace: "shop"},
		Type:       SecretType, Data: map[string][]byte{SecretKey: data},
	})
	store := engine.Store(client)
	get := func() error {
		_, err := store.Get(context.Background(), "shop", "web", "0123456789abcdef")
		return err
	}
	require.Error(t, get()) // warm: the fake clientset's first read

	for _, tc := range []struct {
		name     string
		requests int
		// rounds: the smallest peak of that many rounds is the one
		// bounded, as the collector's lag adds a few MiB to some.
		rounds int
		// limit bounds the peak added, in MiB.
		limit uint64
	}{
		{"one request", 1, 1, 16},
		{"ten at once", 10, 3, 23},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var peaks []string
			least := uint64(math.MaxUint64)
			for range tc.rounds {
				errs := make([]error, tc.requests)
				peak := peakHeapAdded(tc.requests, func() {
					var wg sync.WaitGroup
					start := make(chan struct{})
					for i := range tc.requests {
						wg.Go(func() { <-start; errs[i] = get() })
					}
					close(start)
					wg.Wait()
				})
				for _, err := range errs {
					require.Error(t, err)
					require.Equal(t, ReasonStoredRenderTooLarge, failure.ReasonOf(err), "%v", err)
					require.ErrorContains(t, err, fmt.Sprintf("string longer than %d bytes", MaxStoredString))
				}
				least = min(least, peak)
				peaks = append(peaks, fmt.Sprintf("%.1f", float64(peak)/(1<<20)))
			}
			t.Logf("%d request(s) of a %d-byte Secret: peak heap added %s MiB", tc.requests, len(data), strings.Join(peaks, ", "))
			require.LessOrEqual(t, least, tc.limit<<20, "peak heap added")
		})
	}
}

// TestStoreDecodesWait: a stored render waits while MaxStoredDecodes others
// are decoded, and gives up when its request ends, with InputUnavailable.
func TestStoreDecodesWait(t *testing.T) {
	engine := testEngine(Limits{})
	r, err := New([]*unstructured.Unstructured{storedConfigMap("a", nil)})
	require.NoError(t, err)
	data, err := encode(r.Objects)
	require.NoError(t, err)
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName("web", r.Ref), Namespace: "shop"},
		Type:       SecretType, Data: map[string][]byte{SecretKey: data},
	})
	store := engine.Store(client)
	for range MaxStoredDecodes {
		engine.decodes <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := store.Get(ctx, "shop", "web", r.Ref)
		done <- err
	}()
	// Whether it waits yet or not, it cannot be decoded before its
	// request ends.
	cancel()
	err = <-done
	assert.Equal(t, sourcefailure.ReasonInputUnavailable, failure.ReasonOf(err), "%v", err)
	assert.ErrorContains(t, err, "waited for one of the 2 stored renders decoded now")

	<-engine.decodes
	got, err := store.Get(context.Background(), "shop", "web", r.Ref)
	require.NoError(t, err)
	assert.Equal(t, r.Ref, got.Ref)
}
