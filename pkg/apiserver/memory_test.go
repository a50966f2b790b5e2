package apiserver

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemoryLimitBytes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2 := write("memory.max", "536870912\n")
	v2None := write("none.max", "max\n")
	v1None := write("limit_in_bytes", "9223372036854771712\n")
	missing := filepath.Join(dir, "missing")

	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })

	debug.SetMemoryLimit(460 << 20)
	for _, tc := range []struct {
		name  string
		files []string
		want  int64
	}{
		{"cgroup v2 limit", []string{v2}, 512 << 20},
		{"the first file that exists decides", []string{missing, v2, v2None}, 512 << 20},
		{"no cgroup limit: GOMEMLIMIT", []string{v2None, v2}, 460 << 20},
		{"cgroup v1 without a limit: GOMEMLIMIT", []string{v1None}, 460 << 20},
		{"no cgroup files: GOMEMLIMIT", []string{missing}, 460 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := memoryLimitBytes(tc.files)
			assert.True(t, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	debug.SetMemoryLimit(math.MaxInt64)
	_, ok := memoryLimitBytes([]string{v2None})
	assert.False(t, ok, "neither a cgroup limit nor GOMEMLIMIT")
}
