// Command standin is a small binary for the tests of hack/image that do not
// need the server itself: it prints its arguments.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("standin", os.Args[1:])
}
