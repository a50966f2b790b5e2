package cluster

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// The refusals that start at 0 are declared reasons.
func TestRefusalReasonsAreDeclared(t *testing.T) {
	for _, reason := range refusalReasons {
		assert.True(t, slices.ContainsFunc(failure.Reasons(), func(r failure.Reason) bool { return r.Name == reason }), reason)
	}
}
