// Command convoy-apiserver is convoy's observer: an aggregated API server for
// the Release subresources, and the drift and health loops.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kumodo/convoy-apiserver/cmd/convoy-apiserver/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
