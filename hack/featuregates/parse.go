package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// minor is a major.minor version.
type minor struct{ major, minor int }

func (m minor) atMost(o minor) bool {
	return m.major < o.major || m.major == o.major && m.minor <= o.minor
}

// spec is one entry of a gate's VersionedSpecs.
type spec struct {
	version  minor
	def      bool
	stage    string // Alpha, Beta, GA, Deprecated, PreAlpha
	locked   bool
	minCompt *minor // MinCompatibilityVersion, nil when unset
}

// gate is one row of the table: the spec in effect at the emulated version.
type gate struct {
	name     string
	stage    string
	def      bool
	locked   bool
	kubelet  bool
	requires []string
}

// goFile is a parsed source file with its feature constants and imports.
type goFile struct {
	src     pkgSource
	ast     *ast.File
	consts  map[string]string // Go identifier → gate name
	imports map[string]string // local name → import path
}

// collect reads every source and returns kubelet's gates, sorted by name.
func collect(dirs map[string]string) ([]gate, error) {
	files := map[string]*goFile{} // by import path
	for _, s := range sources {
		f, err := parseSource(filepath.Join(dirs[s.module], s.file), s)
		if err != nil {
			return nil, err
		}
		files[s.importPath] = f
	}
	specs := map[string][]spec{}
	deps := map[string][]string{}
	for _, s := range sources {
		if !s.register {
			continue
		}
		if err := files[s.importPath].maps(files, specs, deps); err != nil {
			return nil, fmt.Errorf("%s: %w", s.file, err)
		}
	}
	used, err := kubeletUses(dirs["k8s.io/kubernetes"], files)
	if err != nil {
		return nil, err
	}
	var out []gate
	for name, ss := range specs {
		sp := inEffect(ss)
		out = append(out, gate{name: name, stage: sp.stage, def: sp.def, locked: sp.locked, kubelet: used[name], requires: deps[name]})
	}
	for name := range deps {
		if _, ok := specs[name]; !ok {
			return nil, fmt.Errorf("dependency of an unknown gate %s", name)
		}
	}
	slices.SortFunc(out, func(a, b gate) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// inEffect is the spec kubelet uses: the last one at or below the emulated
// version whose minimum compatibility version is met; PreAlpha if none.
func inEffect(ss []spec) spec {
	for i := len(ss) - 1; i >= 0; i-- {
		s := ss[i]
		if !s.version.atMost(emulation) {
			continue
		}
		if s.minCompt != nil && !s.minCompt.atMost(minCompatible) {
			continue
		}
		return s
	}
	return spec{stage: "PreAlpha"}
}

func parseSource(path string, s pkgSource) (*goFile, error) {
	af, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	f := &goFile{src: s, ast: af, consts: map[string]string{}, imports: importNames(af)}
	for _, d := range af.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			// A gate constant is typed Feature, or an untyped string
			// (ReloadKubeletClientCAFile is).
			if (vs.Type != nil && !isType(vs.Type, "Feature")) || len(vs.Names) != 1 || len(vs.Values) != 1 {
				continue
			}
			v, ok := constString(vs.Values[0])
			if !ok {
				if vs.Type == nil {
					continue
				}
				return nil, fmt.Errorf("%s: constant %s is not a string literal", path, vs.Names[0].Name)
			}
			f.consts[vs.Names[0].Name] = v
		}
	}
	return f, nil
}

// constString reads "Name" or featuregate.Feature("Name").
func constString(e ast.Expr) (string, bool) {
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 && isType(call.Fun, "Feature") {
		e = call.Args[0]
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// importNames maps each import's local name to its path (the last path
// element when unnamed, which holds for every package read here).
func importNames(af *ast.File) map[string]string {
	m := map[string]string{}
	for _, is := range af.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if is.Name != nil {
			name = is.Name.Name
		}
		m[name] = p
	}
	return m
}

// isType reports whether e is the type name, bare or package-qualified.
func isType(e ast.Expr, name string) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == name
	case *ast.SelectorExpr:
		return t.Sel.Name == name
	}
	return false
}

// maps adds every versioned map and dependency map literal of f.
func (f *goFile) maps(files map[string]*goFile, specs map[string][]spec, deps map[string][]string) error {
	var err error
	ast.Inspect(f.ast, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok || err != nil {
			return err == nil
		}
		mt, ok := cl.Type.(*ast.MapType)
		if !ok || !isType(mt.Key, "Feature") {
			return true
		}
		switch {
		case isType(mt.Value, "VersionedSpecs"):
			err = f.versioned(cl, files, specs)
		case isSliceOf(mt.Value, "Feature"):
			err = f.dependencies(cl, files, deps)
		}
		return false
	})
	return err
}

func isSliceOf(e ast.Expr, name string) bool {
	at, ok := e.(*ast.ArrayType)
	return ok && at.Len == nil && isType(at.Elt, name)
}

func (f *goFile) versioned(cl *ast.CompositeLit, files map[string]*goFile, specs map[string][]spec) error {
	for _, el := range cl.Elts {
		kv := el.(*ast.KeyValueExpr)
		name, err := f.resolve(kv.Key, files)
		if err != nil {
			return err
		}
		var ss []spec
		for _, se := range kv.Value.(*ast.CompositeLit).Elts {
			s, err := parseSpec(se.(*ast.CompositeLit))
			if err != nil {
				return fmt.Errorf("gate %s: %w", name, err)
			}
			ss = append(ss, s)
		}
		if old, dup := specs[name]; dup && !reflect.DeepEqual(old, ss) {
			return fmt.Errorf("gate %s registered twice with different specs", name)
		}
		specs[name] = ss
	}
	return nil
}

func (f *goFile) dependencies(cl *ast.CompositeLit, files map[string]*goFile, deps map[string][]string) error {
	for _, el := range cl.Elts {
		kv := el.(*ast.KeyValueExpr)
		name, err := f.resolve(kv.Key, files)
		if err != nil {
			return err
		}
		var on []string
		for _, d := range kv.Value.(*ast.CompositeLit).Elts {
			dn, err := f.resolve(d, files)
			if err != nil {
				return err
			}
			on = append(on, dn)
		}
		slices.Sort(on)
		if old, dup := deps[name]; dup && !slices.Equal(old, on) {
			return fmt.Errorf("gate %s has two dependency lists", name)
		}
		if len(on) > 0 {
			deps[name] = on
		}
	}
	return nil
}

// resolve turns a gate expression (Name, pkg.Name or
// featuregate.Feature(pkg.Name)) into the gate's name.
func (f *goFile) resolve(e ast.Expr, files map[string]*goFile) (string, error) {
	switch x := e.(type) {
	case *ast.Ident:
		if v, ok := f.consts[x.Name]; ok {
			return v, nil
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if of, ok := files[f.imports[id.Name]]; ok {
				if v, ok := of.consts[x.Sel.Name]; ok {
					return v, nil
				}
			}
		}
	case *ast.CallExpr:
		if len(x.Args) == 1 && isType(x.Fun, "Feature") {
			return f.resolve(x.Args[0], files)
		}
	}
	return "", fmt.Errorf("cannot resolve gate expression %s", exprString(e))
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}

func parseSpec(cl *ast.CompositeLit) (spec, error) {
	var s spec
	for _, el := range cl.Elts {
		kv := el.(*ast.KeyValueExpr)
		key := kv.Key.(*ast.Ident).Name
		var err error
		switch key {
		case "Version":
			s.version, err = parseVersion(kv.Value)
		case "MinCompatibilityVersion":
			var m minor
			m, err = parseVersion(kv.Value)
			s.minCompt = &m
		case "Default":
			s.def, err = parseBool(kv.Value)
		case "LockToDefault":
			s.locked, err = parseBool(kv.Value)
		case "PreRelease":
			s.stage, err = parseStage(kv.Value)
		default:
			err = fmt.Errorf("unknown spec field %s", key)
		}
		if err != nil {
			return s, err
		}
	}
	if s.stage == "" {
		return s, fmt.Errorf("spec without PreRelease")
	}
	return s, nil
}

// parseVersion reads version.MustParse("1.37") or version.MajorMinor(1, 37).
func parseVersion(e ast.Expr) (minor, error) {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return minor{}, fmt.Errorf("version is not a call")
	}
	var parts []string
	for _, a := range call.Args {
		lit, ok := a.(*ast.BasicLit)
		if !ok {
			return minor{}, fmt.Errorf("version argument is not a literal")
		}
		v := lit.Value
		if lit.Kind == token.STRING {
			v, _ = strconv.Unquote(v)
		}
		parts = append(parts, strings.Split(v, ".")...)
	}
	if len(parts) != 2 {
		return minor{}, fmt.Errorf("version %v is not major.minor", parts)
	}
	maj, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return minor{}, fmt.Errorf("version %v is not numeric", parts)
	}
	return minor{maj, mi}, nil
}

func parseBool(e ast.Expr) (bool, error) {
	if id, ok := e.(*ast.Ident); ok && (id.Name == "true" || id.Name == "false") {
		return id.Name == "true", nil
	}
	return false, fmt.Errorf("not a bool literal")
}

func parseStage(e ast.Expr) (string, error) {
	var name string
	switch x := e.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	}
	switch name {
	case "Alpha", "Beta", "GA", "Deprecated", "PreAlpha":
		return name, nil
	}
	return "", fmt.Errorf("unknown PreRelease %q", name)
}

// kubeletUses lists the gates that kubelet's own code refers to.
func kubeletUses(k8sDir string, files map[string]*goFile) (map[string]bool, error) {
	used := map[string]bool{}
	for _, d := range kubeletDirs {
		err := filepath.WalkDir(filepath.Join(k8sDir, d), func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			af, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
			if err != nil {
				return fmt.Errorf("parse: %w", err)
			}
			imports := importNames(af)
			ast.Inspect(af, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
					if of, ok := files[imports[id.Name]]; ok {
						if v, ok := of.consts[sel.Sel.Name]; ok {
							used[v] = true
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("kubelet sources: %w", err)
		}
	}
	return used, nil
}
