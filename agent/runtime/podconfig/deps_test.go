package podconfig

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// allowedImports are the packages the builders may import: pure standard
// library, API types and helpers, and kernelet's pure QoS and
// oom_score_adj arithmetic. A new import must be added here, and is a
// question for review: the package stays free of side effects.
var allowedImports = map[string]bool{
	"bufio": true, "bytes": true, "encoding/json": true, "errors": true, "fmt": true,
	"hash/fnv": true, "io": true, "maps": true, "math": true, "net": true, "os": true,
	"path": true, "path/filepath": true, "reflect": true, "slices": true, "strconv": true,
	"strings": true, "time": true,
	"k8s.io/api/core/v1":                            true,
	"k8s.io/api/node/v1":                            true,
	"k8s.io/apimachinery/pkg/api/errors":            true,
	"k8s.io/apimachinery/pkg/api/resource":          true,
	"k8s.io/apimachinery/pkg/util/validation":       true,
	"k8s.io/cri-api/pkg/apis/runtime/v1":            true, // the CRI message types, not the client
	"k8s.io/kubelet/pkg/types":                      true,
	"github.com/kernelet/kernelet/agent/qos":        true,
	"github.com/kernelet/kernelet/cgroups":          true, // CPUShares, CPUQuota
	"github.com/kernelet/kernelet/internal/podutil": true, // pod identity, downward-API fields
	"github.com/kernelet/kernelet/oom":              true, // ScoreAdj
}

// allowedCalls bound what the builders use of the imported packages that
// can also act on the machine: os only to open the resolver file
// SandboxOptions.ResolvConf names (DNSConfig), net only to parse and join
// addresses.
var allowedCalls = map[string]map[string]bool{
	"os":  {"Open": true},
	"net": {"ParseIP": true, "JoinHostPort": true},
}

// forbiddenDeps must not be reached even indirectly: the CRI and API
// clients and kernelet's packages that act on the runtime, the API server
// or the disk. An entry ending in "/" forbids a tree, others one package.
var forbiddenDeps = []string{
	"k8s.io/cri-client/",
	"k8s.io/cri-api/pkg/apis", // the RuntimeService/ImageManagerService interfaces
	"k8s.io/client-go/",
	"github.com/containerd/containerd/",
	"github.com/containerd/containerd",
	"github.com/kernelet/kernelet/agent/runtime",
	"github.com/kernelet/kernelet/agent/volume",
	"github.com/kernelet/kernelet/agent/logs",
	"github.com/kernelet/kernelet/agent/kubeclient",
	"github.com/kernelet/kernelet/agent/podworkers",
	"github.com/kernelet/kernelet/agent/server",
	"github.com/kernelet/kernelet/status/",
}

// TestPureImports keeps the package's own imports and its use of os and
// net to the lists above.
func TestPureImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .GoFiles "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range strings.Fields(string(out)) {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		local := map[string]string{} // the file's name of an import → its path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !allowedImports[p] {
				t.Errorf("%s imports %s: not in allowedImports (the builders must stay pure)", name, p)
			}
			n := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			local[n] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok {
				if allowed, limited := allowedCalls[local[id.Name]]; limited && !allowed[sel.Sel.Name] {
					t.Errorf("%s: %s.%s: only %v of %s may be used", fset.Position(sel.Pos()), id.Name, sel.Sel.Name, allowed, local[id.Name])
				}
			}
			return true
		})
	}
}

// TestNoClientDeps walks every package the builders link (go list -deps).
func TestNoClientDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, bad := range forbiddenDeps {
			if p == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad) {
				t.Errorf("podconfig depends on %s (forbidden: %s)", p, bad)
			}
		}
	}
}
