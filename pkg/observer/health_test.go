package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/tools/cache"
)

func TestNextDelay(t *testing.T) {
	l := &HealthLoop{delays: map[cache.ObjectName]time.Duration{}}
	k := cache.ObjectName{Namespace: "shop", Name: "web"}
	var got []time.Duration
	for range 7 {
		got = append(got, l.nextDelay(k, false, 5*time.Minute))
	}
	assert.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 32 * time.Second, 32 * time.Second}, got)
	assert.Equal(t, 10*time.Second, l.nextDelay(k, false, 10*time.Second), "never past the interval")
	assert.Equal(t, 5*time.Minute, l.nextDelay(k, true, 5*time.Minute), "all healthy: at the interval")
	assert.Equal(t, 2*time.Second, l.nextDelay(k, false, 5*time.Minute), "starts again at 2s")
}
