//go:build !linux

package sandbox

// limitMemory is Linux only (RLIMIT_DATA): elsewhere the child has the soft
// limit of GOMEMLIMIT alone.
func limitMemory(string) error { return nil }
