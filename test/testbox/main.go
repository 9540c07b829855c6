package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	b := &box{
		stdout: os.Stdout,
		stderr: os.Stderr,
		sigs:   sigs,
	}
	os.Exit(b.run(os.Args[1:]))
}
