// Package version is the build stamp of convoy-apiserver and kubectl-convoy:
// `make build` and `make image` set it with -ldflags -X (see the Makefile);
// a plain `go build` reports v0.0.0-dev.
package version

import (
	"fmt"
	"runtime"

	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// Set at build time with
// -X github.com/kumodo/convoy-apiserver/pkg/version.gitVersion=... (and so on).
var (
	gitVersion = "v0.0.0-dev"
	gitCommit  = "unknown"
	buildDate  = "unknown"
)

// Info is what a binary says about its build.
type Info struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit"`
	BuildDate  string `json:"buildDate"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns the build stamp of this binary.
func Get() Info {
	return Info{
		GitVersion: gitVersion,
		GitCommit:  gitCommit,
		BuildDate:  buildDate,
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.GitVersion, i.GitCommit, i.BuildDate, i.GoVersion, i.Platform)
}

// metricSet holds convoy_build_info.
var metricSet = metricset.New()

var buildInfo = metricSet.GaugeVec(&metrics.GaugeOpts{
	Name:           "convoy_build_info",
	Help:           "1, with the version, commit and Go version of the running convoy-apiserver as labels.",
	StabilityLevel: metrics.ALPHA,
}, []string{"version", "git_commit", "go_version"})

// RegisterMetrics registers convoy_build_info with the legacy registry that
// the API server serves on /metrics, and sets it.
func RegisterMetrics() {
	metricSet.Register()
	i := Get()
	buildInfo.WithLabelValues(i.GitVersion, i.GitCommit, i.GoVersion).Set(1)
}
