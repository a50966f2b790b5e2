// Command kubectl-convoy is a kubectl plugin for the subresources that
// convoy-apiserver serves: `kubectl convoy release health|diff|preview|sync
// NAME`. Install it on PATH; kubectl finds it as `kubectl convoy`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kumodo/convoy-apiserver/cmd/kubectl-convoy/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := cmd.Execute(ctx, cmd.NewCommand(streams), streams.ErrOut)
	stop()
	os.Exit(code)
}
