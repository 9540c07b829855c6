// Command kernelet is a Linux node agent: it runs the pods meant for this
// node through the CRI and takes its view of resources straight from the
// kernel. See `kernelet help`.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
