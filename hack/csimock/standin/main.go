package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: standin hostpathplugin|registrar [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "hostpathplugin":
		err = runHostpath(ctx, os.Args[2:])
	case "registrar":
		err = runRegistrar(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown stand-in %q (hostpathplugin or registrar)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "standin %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
