package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(Main(context.Background(), CommandLine(os.Args), os.Stdout, os.Stderr))
}
