package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// The reasons convoy_target_refusals_total counts (and starts at 0) are
// refusals in the registry too, so the reasons page says so.
func TestRefusalReasonsAreRefusals(t *testing.T) {
	for _, reason := range refusalReasons {
		assert.True(t, failure.IsRefusal(reason), reason)
	}
}
