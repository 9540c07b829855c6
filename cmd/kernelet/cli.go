package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// subcommand is one `kernelet <name>` command.
type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"run":     {"run the node agent", runCommand},
		"kubelet": {"run the node agent in kubelet's place: kubelet's command line and defaults (also: the binary named kubelet)", kubeletCommand},
		"trace":   {"trace oom|reclaim|exit|cgroup: live kernel events, resolved to pods", traceCommand},
		"status":  {"ask a running agent for its health and status", statusCommand},
		"top":     {"live terminal view of memory pressure and pods (from the agent's dashboard stream)", topCommand},
		"config":  {"config validate FILE: print the effective configuration or every error", configCommand},
		"version": {"print the version", versionCommand},
	}
}

// Main runs kernelet with args and returns the process exit code:
// 0 success, 1 failure, 2 usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := subcommands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kernelet: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]subcommand) {
	fmt.Fprintln(w, "usage: kernelet <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
}

// CommandLine is the command line Main runs for a process started as
// argv: a binary named kubelet is `kernelet kubelet` (kernelet installed
// in kubelet's place).
func CommandLine(argv []string) []string {
	if len(argv) > 0 && filepath.Base(argv[0]) == "kubelet" {
		return append([]string{"kubelet"}, argv[1:]...)
	}
	if len(argv) == 0 {
		return nil
	}
	return argv[1:]
}

// newFlagSet is a subcommand's flag set: pflag, as kubelet and kubectl
// (--flag value, --flag=value, flags after arguments, underscores read as
// hyphens), its messages on stderr.
func newFlagSet(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	return fs
}

// parseFlags parses args into fs; it returns the exit code to use when
// parsing ends the command (-h/--help: 0, bad flags: 2) and ok=false then.
func parseFlags(fs *pflag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, pflag.ErrHelp):
		return 0, false
	default:
		return 2, false
	}
}

// joinLines indents each line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
