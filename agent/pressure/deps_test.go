package pressure

import (
	"os/exec"
	"strings"
	"testing"
)

// The pressure side and the OOM stream are rooms of their own: the agent
// root builds them and hands them what they need, they never reach back
// into it.
func TestNoAgentRootImport(t *testing.T) {
	for _, pkg := range []string{".", "../oomwatch"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for dep := range strings.Lines(string(out)) {
			if strings.TrimSpace(dep) == "github.com/kernelet/kernelet/agent" {
				t.Errorf("%s imports the agent root", pkg)
			}
		}
	}
}
