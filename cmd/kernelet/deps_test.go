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
	// client-go's clientset registers every built-in API group in its
	// scheme at start and links a typed client for each (issue 9):
	// internal/clientset is the agent's client.
	"k8s.io/client-go/kubernetes":                     "the full clientset; use internal/clientset",
	"k8s.io/client-go/kubernetes/scheme":              "registers every API group at init; use clientset.Scheme",
	"k8s.io/client-go/informers/internalinterfaces":   "client-go's informers need the full clientset; build cache.NewSharedIndexInformer over clientset.ListWatch",
	"k8s.io/client-go/tools/events":                   "the events/v1 library needs the full clientset; status/events uses tools/record with its own sink",
	"k8s.io/client-go/discovery":                      "imports the full scheme and the OpenAPI models",
	"k8s.io/component-helpers/apimachinery/lease":     "its lease controller needs the full clientset; status/node renews the Lease itself",
	"k8s.io/apiserver/pkg/util/proxy":                 "imports client-go informers; agent/streaming translates and tunnels streams itself",
	"k8s.io/apiserver/pkg/server/dynamiccertificates": "imports client-go informers and the clientset; agent/server/auth reloads the client CA itself",
}

// Allowed on purpose: component-base's JSON log format (go.uber.org/zap,
// github.com/go-logr/zapr) for logging.format: json, as kubelet registers
// it; measured +0.86 MB on the binary (44.58 → 45.45 MB, go build -tags
// grpcnotrace, this branch against main). spf13/pflag and
// component-base/cli/flag were in the module graph already.

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
