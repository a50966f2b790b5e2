package cluster

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSnapshotMemory reports the live heap per object of a kept
// Snapshot: a namespace of a 5,000-Release fleet holds 75,000 ConfigMaps.
func BenchmarkSnapshotMemory(b *testing.B) {
	const n = 75_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		snap := newSnapshot(time.Now(), maphash.MakeSeed())
		for i := range n {
			// Strings of their own, as a decoded LIST page has them.
			snap.add(fmt.Sprintf("release-%05d-config-%02d", i/14, i%14), strconv.Itoa(1_000_000+i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/object")
		runtime.KeepAlive(snap)
	}
}
