package main

import (
	"strings"
	"testing"

	"github.com/kernelet/kernelet/agent"
)

// A runtime the agent is connected to but that does not answer (stopped,
// or too slow) is not reported as "not connected".
func TestPrintRuntime(t *testing.T) {
	for name, tc := range map[string]struct {
		rt   agent.RuntimeStatus
		want string
	}{
		"never connected": {agent.RuntimeStatus{Error: "dial unix /run/containerd/containerd.sock: connect: no such file"}, "Runtime:     not connected: dial unix"},
		"not answering":   {agent.RuntimeStatus{Connected: true, Error: "rpc error: code = Unavailable"}, "Runtime:     not answering: rpc error: code = Unavailable"},
	} {
		var sb strings.Builder
		printStatus(&sb, "http://127.0.0.1:10248", 500, "", agent.Status{Runtime: tc.rt})
		if !strings.Contains(sb.String(), tc.want) {
			t.Errorf("%s: output has no %q:\n%s", name, tc.want, sb.String())
		}
	}
}
