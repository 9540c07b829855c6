package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kernelet/kernelet/agent"
)

func versionCommand(_ context.Context, _ []string, stdout, stderr io.Writer) int {
	return printVersion(stdout, stderr, "true")
}

// printVersion is --version: "true" prints one line, "raw" a JSON object
// (as kubelet's --version=raw); any other value is a usage error.
func printVersion(stdout, stderr io.Writer, how string) int {
	rev := agent.Revision()
	if rev == "" {
		rev = "unknown"
	}
	switch how {
	case "true":
		fmt.Fprintf(stdout, "kernelet %s (revision %s, %s)\n", agent.Version, rev, agent.GoVersion())
	case "raw":
		b, _ := json.MarshalIndent(map[string]string{"version": agent.Version, "revision": rev, "goVersion": agent.GoVersion()}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	default:
		fmt.Fprintf(stderr, "invalid --version %q: want true, false or raw\n", how)
		return 2
	}
	return 0
}
