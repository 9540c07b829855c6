package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one `testenv <component> <verb>` entry.
type command struct {
	usage string
	run   func(args []string) error
}

var commands = map[string]command{}

func register(name, usage string, run func(args []string) error) {
	if _, dup := commands[name]; dup {
		panic("testenv: command registered twice: " + name)
	}
	commands[name] = command{usage: usage, run: run}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testenv <component> <verb> [flags]")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-22s %s\n", n, commands[n].usage)
	}
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	// A command is "<component> <verb>", or one word (reap).
	name, rest := os.Args[1], os.Args[2:]
	if _, one := commands[name]; !one && len(os.Args) >= 3 {
		name, rest = strings.Join(os.Args[1:3], " "), os.Args[3:]
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "testenv: unknown command %q\n", name)
		usage()
		os.Exit(2)
	}
	if err := cmd.run(rest); err != nil {
		fmt.Fprintf(os.Stderr, "testenv %s: %v\n", name, err)
		os.Exit(1)
	}
}

// interruptible is a context that Ctrl-C and SIGTERM end.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// logf prints one progress line of a component to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
