package apiserver

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// metricSet holds the metrics of the server process itself.
var metricSet = metricset.New()

var memoryLimit = metricSet.Gauge(&metrics.GaugeOpts{
	Name: "convoy_process_memory_limit_bytes",
	Help: "The memory limit of this process: its container's (cgroup memory.max), else GOMEMLIMIT; 0 when it has neither. " +
		"process_resident_memory_bytes / (convoy_process_memory_limit_bytes > 0) says how near the process is to being killed.",
	StabilityLevel: metrics.ALPHA,
})

// cgroupMemoryFiles are where the memory limit of this process's cgroup is
// read: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noLimit is above any real limit: cgroup v1 writes about 2^63 for none.
const noLimit = 1 << 62

// memoryLimitBytes returns the memory limit of this process: the first of
// files that holds a limit, else GOMEMLIMIT; false when there is none.
func memoryLimitBytes(files []string) (int64, bool) {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err == nil && v > 0 && v < noLimit {
			return v, true
		}
		break // "max", or no limit: the first file that exists decides
	}
	if v := debug.SetMemoryLimit(-1); v > 0 && v < math.MaxInt64 {
		return v, true
	}
	return 0, false
}
