package failure

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declared counts the runs of TestDeclare: a reason is declared once per
// process, and -count=N runs the test N times.
var declared atomic.Int32

func TestDeclare(t *testing.T) {
	name := fmt.Sprintf("TestOnlyReason%d", declared.Add(1))
	r := Reason{Name: name, Class: ClassOverLimit, Shows: []Where{InSync}, Refusal: true, Means: "m", Action: "a"}
	assert.Equal(t, name, Declare(r))
	got, ok := Lookup(name)
	require.True(t, ok)
	assert.Equal(t, "github.com/kumodo/convoy-apiserver/pkg/failure", got.Package, "the package that called Declare")
	r.Package = got.Package
	assert.Equal(t, r, got)
	assert.Equal(t, ClassOverLimit, ClassOf(name))
	assert.True(t, IsRefusal(name))
	assert.Equal(t, ClassInternal, ClassOf("NeverDeclared"), "an undeclared reason is a bug")
	assert.False(t, IsRefusal("NeverDeclared"))
	assert.Contains(t, Reasons(), got)

	for name, bad := range map[string]Reason{
		"twice":         r,
		"no class":      {Name: "X1", Shows: []Where{InSync}, Means: "m", Action: "a"},
		"unknown class": {Name: "X2", Class: "Weird", Shows: []Where{InSync}, Means: "m", Action: "a"},
		"no action":     {Name: "X3", Class: ClassInvalid, Shows: []Where{InSync}, Means: "m"},
		"nowhere":       {Name: "X4", Class: ClassInvalid, Means: "m", Action: "a"},
		"no name":       {Class: ClassInvalid, Shows: []Where{InSync}, Means: "m", Action: "a"},
	} {
		assert.Panics(t, func() { Declare(bad) }, name)
	}
}

func TestCause(t *testing.T) {
	inner := New(ReasonClusterUnreachable, nil, "dial failed")
	mid := New("Mid", inner, "reading ConfigMap a")
	outer := Quiet(ReasonForbidden, mid, "rendering")
	got, ok := Cause(outer)
	require.True(t, ok)
	assert.Same(t, inner, got)
	got, ok = Cause(inner)
	require.True(t, ok)
	assert.Same(t, inner, got)
	_, ok = Cause(assert.AnError)
	assert.False(t, ok)
	_, ok = Cause(nil)
	assert.False(t, ok)
}
