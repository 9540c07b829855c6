package main

import (
	"os/exec"
	"strings"
	"testing"
)

// buildTags are the Makefile's KERNELET_TAGS (keep them in step).
const buildTags = "grpcnotrace"

// footprintForbidden are packages that must not be linked into kernelet,
// each with why: together they once made the binary 108 MB instead of 56 MB
// and the idle agent's RSS 72 MiB instead of 44 MiB (bench/footprint_test.go).
var footprintForbidden = map[string]string{
	"golang.org/x/net/trace": "its html/template calls reflect's Method by name, which turns off the linker's " +
		"dead-code elimination of methods (build with -tags " + buildTags + ")",
	"github.com/google/cel-go/cel":               "CEL comes with k8s.io/apiserver's authorizer factory; agent/server/auth sends SubjectAccessReviews itself",
	"go.opentelemetry.io/otel/sdk/trace":         "the OpenTelemetry SDK and OTLP exporter come with k8s.io/apiserver/pkg/util/webhook",
	"k8s.io/apiserver/pkg/util/webhook":          "brings CEL, OpenTelemetry and konnectivity; use the typed review clients",
	"k8s.io/apiserver/pkg/server/egressselector": "the konnectivity egress dialer, not used by a node",
}

// TestFootprintDependencies keeps the heavy dependency trees out of the
// kernelet binary.
func TestFootprintDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", buildTags, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if why, bad := footprintForbidden[p]; bad {
			t.Errorf("kernelet links %s: %s", p, why)
		}
	}
}
