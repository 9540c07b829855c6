package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/status/node"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

func TestPrintCluster(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c := &agent.ClusterStatus{
		APIServer: "https://10.0.0.1:6443",
		Node: node.Status{NodeName: "n1", Registered: now.Add(-time.Hour), LastStatusPatch: now.Add(-40 * time.Second),
			LastStatusCheck: now.Add(-3 * time.Second), LastLeaseRenew: now.Add(-7 * time.Second),
			LastError: "lease: connection refused", LastErrorTime: now.Add(-2 * time.Minute)},
		Pods: statuspods.Status{Pods: 4, LastPatch: now.Add(-5 * time.Second), LastSync: now.Add(-time.Second)},
	}
	var b bytes.Buffer
	printCluster(&b, c, now)
	out := b.String()
	for _, want := range []string{
		"API server:  https://10.0.0.1:6443",
		"node registered 1h0m0s ago, status written 40s ago (checked 3s ago), lease renewed 7s ago",
		"pod statuses: 4 tracked, last written 5s ago, last sync 1s ago",
		"last node API error 2m0s ago: lease: connection refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "last pods API error") {
		t.Errorf("a pods error line without an error:\n%s", out)
	}
	b.Reset()
	printCluster(&b, &agent.ClusterStatus{APIServer: "https://x"}, now)
	if !strings.Contains(b.String(), "node registered never") {
		t.Errorf("unregistered node:\n%s", b.String())
	}
}
