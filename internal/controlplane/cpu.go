package controlplane

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUSeconds is the CPU time (user and system) process pid has used, from
// /proc (Linux), in seconds at a resolution of the clock tick (10 ms); 0
// when it cannot be read. The benchmarks measure what a request costs
// kube-apiserver and convoy-apiserver with it.
func CPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// follow it are counted from its end.
	end := strings.LastIndexByte(string(data), ')')
	if end < 0 || end+2 > len(data) {
		return 0
	}
	fields := strings.Fields(string(data[end+2:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // clock ticks of 10 ms
}
