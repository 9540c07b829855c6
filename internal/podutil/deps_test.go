package podutil

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNeutral keeps the package importable by every side: it
// imports the standard library, k8s.io/api and k8s.io/apimachinery only,
// never a kernelet package.
func TestImportsNeutral(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.Split(p, "/")[0], ".")
			if !std && !strings.HasPrefix(p, "k8s.io/api/") && !strings.HasPrefix(p, "k8s.io/apimachinery/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
