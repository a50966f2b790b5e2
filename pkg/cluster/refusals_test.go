package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// The refusals that start at 0 are refusals.
func TestRefusalReasonsAreRefusals(t *testing.T) {
	for _, reason := range refusalReasons {
		assert.True(t, failure.IsRefusal(reason), reason)
	}
}
