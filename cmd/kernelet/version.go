package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/internal/kubeversion"
	"github.com/kernelet/kernelet/status/node"
)

func versionCommand(_ context.Context, _ []string, stdout, stderr io.Writer) int {
	return printVersion(stdout, stderr, "true", false)
}

// printVersion is --version: "true" prints one line, "raw" a JSON object
// (as kubelet's --version=raw); any other value is a usage error. As
// kubelet (asKubelet), the line is kubelet's, "Kubernetes <version>", with
// the version the node reports (v1.37.2+kernelet.<version>): kubeadm's
// preflight reads it.
func printVersion(stdout, stderr io.Writer, how string, asKubelet bool) int {
	rev := agent.Revision()
	if rev == "" {
		rev = "unknown"
	}
	switch how {
	case "true":
		if asKubelet {
			kv, err := node.KubeletVersion(kubeversion.Get(), agent.Version)
			if err != nil {
				fmt.Fprintf(stderr, "version: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "Kubernetes %s\n", kv)
			return 0
		}
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
