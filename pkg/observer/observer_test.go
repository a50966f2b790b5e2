package observer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	componentbaseconfig "k8s.io/component-base/config"
)

// The readyz check "observer": a replica that should run the loops is not
// ready until they run; one that does not lead is.
func TestReady(t *testing.T) {
	elected := New(Config{LeaderElection: componentbaseconfig.LeaderElectionConfiguration{LeaderElect: true}})
	assert.NoError(t, elected.Ready(), "a replica that does not lead serves the API")
	elected.setLeading(true)
	assert.ErrorContains(t, elected.Ready(), "not running")
	elected.running.Store(true)
	assert.NoError(t, elected.Ready())
	elected.running.Store(false)
	elected.setLeading(false)
	assert.NoError(t, elected.Ready())

	alone := New(Config{})
	assert.Error(t, alone.Ready(), "without leader election the loops must run")
	alone.running.Store(true)
	assert.NoError(t, alone.Ready())
}
