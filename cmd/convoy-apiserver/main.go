// Command convoy-apiserver is convoy's observer: an aggregated API server for
// the Release subresources, and the drift and health loops.
package main

import (
	"os"

	// CA roots in the binary, used when the system has none: the image is
	// an empty base with the binary alone (hack/image), and registries,
	// Helm repositories and Git servers of the Releases are reached over
	// TLS.
	_ "golang.org/x/crypto/x509roots/fallback"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kumodo/convoy-apiserver/cmd/convoy-apiserver/app"
	"github.com/kumodo/convoy-apiserver/pkg/sandbox"
)

func main() {
	// convoy-apiserver templates Helm charts in children of itself, which
	// the render timeout can kill (pkg/sandbox).
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		os.Exit(sandbox.RunChild(os.Stdin, os.Stdout))
	}
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
