package render

import (
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
)

// HelmVersion is the version of helm.sh/helm/v4 in go.mod, whose SDK
// templates charts (TestHelmVersionIsGoMods keeps them together).
const HelmVersion = "v4.3.1"

// capabilities are the .Capabilities a chart is templated with, those
// helm template of the released CLI of HelmVersion reports: Helm's
// defaults (common.DefaultCapabilities: Kubernetes vMAJOR.MINOR.0 of the
// client-go linked, the API versions of its scheme), and
// .HelmVersion.Version HelmVersion. Helm's sources say only "v4.3"
// (internal/version); its release build sets the full version, and
// GitTreeState "clean", with -ldflags -X. What a library build cannot know
// stays as Helm's module gives it: GitCommit is empty and GoVersion is the
// Go this binary was built with (docs/users/directories.md).
var capabilities = sync.OnceValue(func() *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	caps.HelmVersion.Version = HelmVersion
	caps.HelmVersion.GitTreeState = "clean"
	return caps
})
