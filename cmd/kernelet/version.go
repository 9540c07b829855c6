package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kernelet/kernelet/agent"
)

func versionCommand(_ context.Context, _ []string, stdout, _ io.Writer) int {
	rev := agent.Revision()
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(stdout, "kernelet %s (revision %s, %s)\n", agent.Version, rev, agent.GoVersion())
	return 0
}
