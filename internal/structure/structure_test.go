package structure

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kernelet/kernelet"

// kernelSide are the packages (with everything below them) that read
// and decide on what the kernel knows; podSide are those that run pods
// and talk to the API server.
var (
	kernelSide = []string{"bpf", "cgroups", "kevents", "oom", "eviction"}
	podSide    = []string{"agent", "status", "cmd", "internal/clientset"}
)

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

func under(pkg string, dirs []string) bool {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return false
	}
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// TestKernelSideImportsNoPodSide lists every kernel-side package with
// its transitive dependencies (go list -deps, tests included) and fails
// on any pod-side package among them.
func TestKernelSideImportsNoPodSide(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	root := repoRoot(t)
	var patterns []string
	for _, d := range kernelSide {
		patterns = append(patterns, "./"+d+"/...")
	}
	args := append([]string{"list", "-test", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg := strings.Fields(strings.ReplaceAll(fields[0], "[", " "))[0]
		pkg = strings.TrimSuffix(pkg, ".test")
		if !under(pkg, kernelSide) || strings.HasPrefix(strings.TrimPrefix(pkg, module+"/"), "test/") {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if under(dep, podSide) {
				t.Errorf("%s (kernel side) depends on %s (pod side)", fields[0], dep)
			}
		}
	}
	if checked < len(kernelSide) {
		t.Fatalf("checked %d kernel-side packages, want at least %d", checked, len(kernelSide))
	}
}

// productFiles walks the module's product Go files: no tests, nothing
// under test/, bench/ or testdata, no generated files.
func productFiles(t *testing.T, root string, fn func(rel string, f *ast.File, fset *token.FileSet)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") && rel != ".", d.Name() == "testdata",
				rel == "test", rel == "bench", rel == "bin", d.Name() == "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		fn(filepath.ToSlash(rel), f, fset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoLongFunctions fails on any product function or function literal
// over 100 lines (from func to the closing brace).
func TestNoLongFunctions(t *testing.T) {
	root := repoRoot(t)
	files := 0
	productFiles(t, root, func(rel string, f *ast.File, fset *token.FileSet) {
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "func literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body == nil {
				return true
			}
			start, end := fset.Position(n.Pos()).Line, fset.Position(body.End()).Line
			if l := end - start + 1; l > 100 {
				t.Errorf("%s:%d: %s is %d lines long (at most 100)", rel, start, name, l)
			}
			return true
		})
	})
	if files < 100 {
		t.Fatalf("read %d product files; the walk is broken", files)
	}
}

// TestAgentRootIsComposition bounds the agent root's size and keeps its
// file names apart from its sub-packages' names.
func TestAgentRootIsComposition(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(root, "agent")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, e := range entries {
		if e.IsDir() {
			subs = append(subs, e.Name())
		}
	}
	lines := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(data, []byte("\n"))
		base := strings.TrimSuffix(name, ".go")
		base = strings.TrimSuffix(strings.TrimSuffix(base, "_linux"), "_other")
		for _, s := range subs {
			if namedLike(base, s) {
				t.Errorf("agent/%s is named like the sub-package agent/%s: its code belongs there", name, s)
			}
		}
		if name != "doc.go" && name != "types.go" {
			for _, other := range sameName(t, dir, name) {
				t.Errorf("agent/%s has the name of agent/%s: one home for what it does", name, other)
			}
		}
	}
	if lines > 3000 {
		t.Errorf("the agent root has %d lines of product code (at most 3,000): move what a sub-package could own", lines)
	}
	if lines == 0 || !slices.Contains(subs, "runtime") {
		t.Fatalf("agent root: %d lines, sub-packages %v: the walk is broken", lines, subs)
	}
}

// namedLike reports whether a root file's base name names the
// sub-package sub: the same word, or the same stem with another ending
// (volumes/volume, probes/prober, serve/server); a longer name that only
// starts with it (podsetup beside pods.go) is another word.
func namedLike(base, sub string) bool {
	if base == sub {
		return true
	}
	n := 0
	for n < len(base) && n < len(sub) && base[n] == sub[n] {
		n++
	}
	short, long := min(len(base), len(sub)), max(len(base), len(sub))
	return n >= 4 && n >= short-1 && long-short <= 2
}

// sameName lists the files below the agent root's sub-packages (product
// files) that have the file name name.
func sameName(t *testing.T, dir, name string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == name && filepath.Dir(p) != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNamedLike(t *testing.T) {
	for _, tc := range []struct {
		base, sub string
		want      bool
	}{
		{"stats", "stats", true}, {"gc", "gc", true}, {"volumes", "volume", true}, {"probes", "prober", true},
		{"serve", "server", true}, {"pods", "podsetup", false}, {"liveview", "live", false},
		{"agent", "apiobjects", false}, {"once", "runonce", false}, {"registries", "runtime", false},
	} {
		if got := namedLike(tc.base, tc.sub); got != tc.want {
			t.Errorf("namedLike(%q, %q) = %v, want %v", tc.base, tc.sub, got, tc.want)
		}
	}
}
