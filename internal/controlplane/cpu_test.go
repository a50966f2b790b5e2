package controlplane

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCPUSeconds(t *testing.T) {
	before := CPUSeconds(os.Getpid())
	x := 0
	// Spin until the count moves by a clock tick (10 ms of CPU), at most
	// about a second's worth of work.
	for i := 0; i < 1_000_000_000 && CPUSeconds(os.Getpid()) <= before; i += 1_000_000 {
		for j := range 1_000_000 {
			x += j % 7
		}
	}
	assert.NotZero(t, x)
	assert.Greater(t, CPUSeconds(os.Getpid()), before, "this process used CPU")
	assert.Zero(t, CPUSeconds(-1), "no such process")
}
