package controlplane

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCPUSeconds(t *testing.T) {
	before := CPUSeconds(os.Getpid())
	x := 0
	for i := range 300_000_000 { // about a second of CPU
		x += i % 7
	}
	assert.NotZero(t, x)
	assert.Greater(t, CPUSeconds(os.Getpid()), before, "this process used CPU")
	assert.Zero(t, CPUSeconds(-1), "no such process")
}
