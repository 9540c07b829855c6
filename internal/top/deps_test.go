package top

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAgentLinksNoTerminalUI keeps the terminal libraries out of the agent:
// only `kernelet top` (this package) imports them, so `kernelet run`
// never calls into them (their package initialisers run in the one
// binary: ~0.3 ms and ~100 KB of heap at start, GODEBUG=inittrace=1).
func TestAgentLinksNoTerminalUI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kernelet/kernelet/agent").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/charmbracelet/") || strings.HasPrefix(p, "github.com/muesli/") ||
			p == "github.com/kernelet/kernelet/internal/top" {
			t.Errorf("the agent links %s", p)
		}
	}
}
