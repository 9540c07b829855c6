package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/kernelet/kernelet/agent"
)

// statusCommand: `kernelet status [--server URL]` prints the agent's health
// (every check) and its status summary. Exit 1 when the agent cannot be
// reached or is unhealthy.
func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:10250", "the agent's API URL")
	asJSON := fs.Bool("json", false, "print the agent's /status as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the agent")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	base := strings.TrimRight(*server, "/")

	code, health, err := get(ctx, base+"/healthz?verbose")
	if err != nil {
		fmt.Fprintf(stderr, "kernelet status: agent at %s not reachable: %v\n", base, err)
		return 1
	}
	_, body, err := get(ctx, base+"/status")
	if err != nil {
		fmt.Fprintf(stderr, "kernelet status: %v\n", err)
		return 1
	}
	if *asJSON {
		fmt.Fprint(stdout, body)
		return exitForHealth(code)
	}
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		fmt.Fprintf(stderr, "kernelet status: %s/status: %v\n", base, err)
		return 1
	}
	printStatus(stdout, base, code, health, st)
	return exitForHealth(code)
}

func exitForHealth(code int) int {
	if code == http.StatusOK {
		return 0
	}
	return 1
}

func printStatus(w io.Writer, base string, code int, health string, st agent.Status) {
	state := "healthy"
	if code != http.StatusOK {
		state = fmt.Sprintf("UNHEALTHY (HTTP %d)", code)
	}
	rev := ""
	if st.Revision != "" {
		rev = " (" + st.Revision + ")"
	}
	fmt.Fprintf(w, "Agent:       %s  kernelet %s%s\n", base, st.Version, rev)
	fmt.Fprintf(w, "Node:        %s (%s)\n", st.NodeName, st.Mode)
	if !st.StartTime.IsZero() {
		fmt.Fprintf(w, "Up:          %s (since %s)\n", time.Since(st.StartTime).Round(time.Second), st.StartTime.Format(time.RFC3339))
	}
	cfg := st.ConfigFile
	if cfg == "" {
		cfg = "(defaults and flags)"
	}
	fmt.Fprintf(w, "Config:      %s\n", cfg)
	fmt.Fprintf(w, "Health:      %s\n%s\n", state, indent(health))
	switch {
	case st.Runtime.Connected && st.Runtime.Info != nil:
		i := st.Runtime.Info
		fmt.Fprintf(w, "Runtime:     %s %s (CRI %s) at %s\n", i.RuntimeName, i.RuntimeVersion, i.RuntimeAPIVersion, i.Endpoint)
		keys := make([]string, 0, len(i.Conditions))
		for k := range i.Conditions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s=%s\n", k, i.Conditions[k])
		}
	default:
		fmt.Fprintf(w, "Runtime:     not connected: %s\n", st.Runtime.Error)
	}
	if len(st.Thresholds) > 0 {
		fmt.Fprintf(w, "Eviction:    %s\n", strings.Join(st.Thresholds, ", "))
	}
	if len(st.Endpoints) > 0 {
		fmt.Fprintf(w, "Endpoints:   %s\n", strings.Join(st.Endpoints, ", "))
	}
}

func get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", url, err)
	}
	return resp.StatusCode, string(b), nil
}
