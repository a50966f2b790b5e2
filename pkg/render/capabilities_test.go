package render

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
)

// HelmVersion is the version go.mod requires, and the capabilities say it
// as the released CLI does (helm version: Version "v4.3.1", GitTreeState
// "clean"). A new Helm: read the differences above again.
func TestHelmVersionIsGoMods(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	assert.Contains(t, strings.Split(string(gomod), "\n"), "\thelm.sh/helm/v4 "+HelmVersion)
	caps := capabilities()
	assert.Equal(t, HelmVersion, caps.HelmVersion.Version)
	assert.Equal(t, "clean", caps.HelmVersion.GitTreeState)
	assert.NotEqual(t, HelmVersion, common.DefaultCapabilities.HelmVersion.Version, "Helm's sources say less")
}
