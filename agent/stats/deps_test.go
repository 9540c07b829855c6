package stats

import (
	"os/exec"
	"strings"
	"testing"
)

// The stats endpoints read the local storage agent/pressure measured in
// their own types: they do not reach the eviction package.
func TestNoEvictionImport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		if strings.TrimSpace(dep) == "github.com/kernelet/kernelet/eviction" {
			t.Error("agent/stats reaches github.com/kernelet/kernelet/eviction")
		}
	}
}
