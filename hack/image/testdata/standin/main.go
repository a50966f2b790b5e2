// Command standin is a small binary for the tests of hack/image, which
// build it as the image builds the server: it prints its arguments and the
// build date its -ldflags stamp.
package main

import (
	"fmt"
	"os"
)

// buildDate is set with -ldflags -X, as pkg/version's is in the server.
var buildDate = "unset"

func main() {
	fmt.Println("standin", os.Args[1:], buildDate)
}
