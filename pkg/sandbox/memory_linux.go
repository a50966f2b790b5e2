package sandbox

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// limitMemory sets RLIMIT_DATA of this process to limit bytes (a decimal
// number; empty: no limit). RLIMIT_DATA counts every private writable
// mapping (the Go heap, its metadata, thread stacks) but not the address
// space the Go runtime reserves without using it, so it bounds the memory
// the process can really take; past it, the runtime dies with "fatal error:
// runtime: out of memory".
func limitMemory(limit string) error {
	if limit == "" {
		return nil
	}
	n, err := strconv.ParseUint(limit, 10, 64)
	if err != nil || n == 0 {
		return fmt.Errorf("%s=%q is not a positive number of bytes", memoryLimitEnv, limit)
	}
	return unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: n, Max: n})
}
