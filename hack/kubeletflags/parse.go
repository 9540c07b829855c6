package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// kflag is one flag of kubelet's command line.
type kflag struct {
	name, shorthand string
	// value is how kubelet binds it: the pflag method's type ("bool",
	// "string", "duration", ...) or the flag.Value constructor or type
	// ("NewMapStringString", "IPVar", ...); "goflag" for a Go flag.
	value string
	// field is the KubeletConfiguration field path ("Authentication.X509.ClientCAFile")
	// for the configuration's flags, "" otherwise.
	field string
	// deprecated is kubelet's deprecation message, "" when not deprecated.
	deprecated string
}

type sourceDirs struct{ kubernetes, componentBase, cadvisor string }

// goFiles are the parsed files of one package directory.
type goFiles []*ast.File

func parseFiles(dir string, names ...string) (goFiles, error) {
	var out goFiles
	fset := token.NewFileSet()
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// fn finds the function (or method, when recv is its receiver's type
// name) called name.
func (g goFiles) fn(name, recv string) (*ast.FuncDecl, error) {
	for _, f := range g {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != name {
				continue
			}
			if recv == "" && fd.Recv == nil {
				return fd, nil
			}
			if recv != "" && fd.Recv != nil && strings.Contains(exprString(fd.Recv.List[0].Type), recv) {
				return fd, nil
			}
		}
	}
	return nil, fmt.Errorf("function %s %s not found", recv, name)
}

// constant returns the string value of the package-level constant name.
func (g goFiles) constant(name string) (string, error) {
	for _, f := range g {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name == name && i < len(vs.Values) {
						if v, ok := stringLit(vs.Values[i]); ok {
							return v, nil
						}
					}
				}
			}
		}
	}
	return "", fmt.Errorf("constant %s not found", name)
}

func collect(src sourceDirs) ([]kflag, error) {
	opts, err := parseFiles(filepath.Join(src.kubernetes, "cmd/kubelet/app/options"),
		"options.go", "osflags_others.go", "globalflags.go", "globalflags_linux.go")
	if err != nil {
		return nil, err
	}
	logs, err := parseFiles(filepath.Join(src.componentBase, "logs/api/v1"), "options.go")
	if err != nil {
		return nil, err
	}
	var flags []kflag
	// KubeletFlags: the flags that are not configuration fields.
	for _, fn := range []struct{ name, recv string }{{"AddFlags", "KubeletFlags"}, {"addContainerRuntimeFlags", ""}, {"addOSFlags", "KubeletFlags"}} {
		fd, err := opts.fn(fn.name, fn.recv)
		if err != nil {
			return nil, err
		}
		fl, err := flagCalls(fd, "fs", "", opts)
		if err != nil {
			return nil, err
		}
		flags = append(flags, fl...)
	}
	cfg, err := configFlags(opts, logs)
	if err != nil {
		return nil, err
	}
	flags = append(flags, cfg...)
	global, err := globalFlags(src, opts)
	if err != nil {
		return nil, err
	}
	flags = append(flags, global...)
	seen := map[string]bool{}
	for _, f := range flags {
		if seen[f.name] {
			return nil, fmt.Errorf("flag --%s registered twice", f.name)
		}
		seen[f.name] = true
	}
	return flags, nil
}

// configFlags are AddKubeletConfigFlags' flags with logsapi.AddFlags',
// each deprecated unless in its notDeprecated map.
func configFlags(opts, logs goFiles) ([]kflag, error) {
	fd, err := opts.fn("AddKubeletConfigFlags", "")
	if err != nil {
		return nil, err
	}
	flags, err := flagCalls(fd, "fs", "", opts)
	if err != nil {
		return nil, err
	}
	lfd, err := logs.fn("addFlags", "")
	if err != nil {
		return nil, err
	}
	lflags, err := flagCalls(lfd, "fs", "Logging.", logs)
	if err != nil {
		return nil, err
	}
	flags = append(flags, lflags...)
	keep := notDeprecated(fd)
	msg := localString(fd, "deprecated")
	if len(keep) == 0 || msg == "" {
		return nil, fmt.Errorf("AddKubeletConfigFlags: no notDeprecated map or deprecated message found")
	}
	for i := range flags {
		if flags[i].field == "" {
			return nil, fmt.Errorf("config flag --%s: no KubeletConfiguration field found", flags[i].name)
		}
		if !keep[flags[i].name] {
			flags[i].deprecated = msg
		}
	}
	return flags, nil
}

// notDeprecated reads the keys of the map literal assigned to notDeprecated.
func notDeprecated(fd *ast.FuncDecl) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(fd, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || exprString(as.Lhs[0]) != "notDeprecated" {
			return true
		}
		if cl, ok := as.Rhs[0].(*ast.CompositeLit); ok {
			for _, e := range cl.Elts {
				if k, ok := stringLit(e.(*ast.KeyValueExpr).Key); ok {
					out[k] = true
				}
			}
		}
		return true
	})
	return out
}

// localString is the string literal assigned to the local variable name.
func localString(fd *ast.FuncDecl, name string) string {
	var out string
	ast.Inspect(fd, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if ok && len(as.Lhs) == 1 && exprString(as.Lhs[0]) == name {
			out, _ = stringLit(as.Rhs[0])
		}
		return out == ""
	})
	return out
}

// globalFlags are AddGlobalFlags' flags (cadvisor's, verflag's) and --help.
func globalFlags(src sourceDirs, opts goFiles) ([]kflag, error) {
	cad, err := parseFiles(filepath.Join(src.cadvisor, "cadvisorflags"), "flags.go")
	if err != nil {
		return nil, err
	}
	fd, err := opts.fn("addCadvisorFlags", "")
	if err != nil {
		return nil, err
	}
	var flags []kflag
	var ferr error
	ast.Inspect(fd, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || exprString(call.Fun) != "register" || len(call.Args) != 3 {
			return true
		}
		sel, ok := call.Args[2].(*ast.SelectorExpr)
		if !ok {
			ferr = fmt.Errorf("addCadvisorFlags: register of %s", exprString(call.Args[2]))
			return false
		}
		name, err := cad.constant(sel.Sel.Name)
		if err != nil {
			ferr = err
			return false
		}
		flags = append(flags, kflag{name: strings.ReplaceAll(name, "_", "-"), value: "goflag"})
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	ver, err := parseFiles(filepath.Join(src.componentBase, "version/verflag"), "verflag.go")
	if err != nil {
		return nil, err
	}
	vname, err := ver.constant("versionFlagName")
	if err != nil {
		return nil, err
	}
	flags = append(flags, kflag{name: vname, value: "version"})
	srv, err := parseFiles(filepath.Join(src.kubernetes, "cmd/kubelet/app"), "server.go")
	if err != nil {
		return nil, err
	}
	nfd, err := srv.fn("NewKubeletCommand", "")
	if err != nil {
		return nil, err
	}
	help, err := flagCalls(nfd, "cleanFlagSet", "", srv)
	if err != nil {
		return nil, err
	}
	return append(flags, help...), nil
}

// methodValue maps the pflag.FlagSet methods that define a flag to the
// value type they bind.
var methodValue = map[string]string{
	"BoolVar": "bool", "BoolP": "bool", "StringVar": "string", "DurationVar": "duration",
	"Int32Var": "int32", "Int64Var": "int64", "Float64Var": "float64", "StringSliceVar": "stringSlice",
	"Var": "", "VarP": "",
}

// flagCalls reads the flags fd defines on the flag set variable fsName;
// fieldPrefix is prepended to configuration field paths (those of a
// variable named c).
func flagCalls(fd *ast.FuncDecl, fsName, fieldPrefix string, g goFiles) ([]kflag, error) {
	var (
		flags      []kflag
		err        error
		deprecated = map[string]string{}
	)
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || err != nil {
			return err == nil
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || exprString(sel.X) != fsName {
			return true
		}
		if sel.Sel.Name == "MarkDeprecated" {
			name, _ := stringLit(call.Args[0])
			deprecated[name], _ = stringLit(call.Args[1])
			return true
		}
		vt, ok := methodValue[sel.Sel.Name]
		if !ok {
			return true
		}
		var f kflag
		if f.name, err = nameArg(call.Args, sel.Sel.Name, g); err != nil {
			return false
		}
		switch sel.Sel.Name { // the shorthand follows the name
		case "BoolP":
			f.shorthand, _ = stringLit(call.Args[1])
		case "VarP":
			f.shorthand, _ = stringLit(call.Args[2])
		}
		f.value = vt
		if vt == "" {
			f.value = valueConstructor(call.Args[0], fd)
		}
		if root, path := fieldOf(call.Args[0]); root == "c" {
			f.field = fieldPrefix + path
		}
		flags = append(flags, f)
		return true
	})
	for i := range flags {
		flags[i].deprecated = deprecated[flags[i].name]
	}
	return flags, err
}

// nameArg is the flag name argument of a flag-defining call.
func nameArg(args []ast.Expr, method string, g goFiles) (string, error) {
	i := 1
	if method == "BoolP" {
		i = 0
	}
	if s, ok := stringLit(args[i]); ok {
		return s, nil
	}
	if id, ok := args[i].(*ast.Ident); ok {
		return g.constant(id.Name)
	}
	return "", fmt.Errorf("flag name %s is not a constant", exprString(args[i]))
}

// valueConstructor names how a Var's flag.Value is made: the function
// called, the type of the composite literal, or "Value" for a field whose
// type is itself a flag.Value.
func valueConstructor(e ast.Expr, fd *ast.FuncDecl) string {
	switch v := e.(type) {
	case *ast.CallExpr:
		s := exprString(v.Fun)
		return s[strings.LastIndex(s, ".")+1:]
	case *ast.UnaryExpr:
		if cl, ok := v.X.(*ast.CompositeLit); ok {
			s := exprString(cl.Type)
			return s[strings.LastIndex(s, ".")+1:]
		}
		if id, ok := v.X.(*ast.Ident); ok { // &local, made by a call in fd
			var made string
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if ok && len(as.Lhs) == 1 && exprString(as.Lhs[0]) == id.Name {
					made = valueConstructor(as.Rhs[0], fd)
				}
				return made == ""
			})
			return made
		}
		return "Value"
	}
	return exprString(e)
}

// fieldOf finds the first &root.A.B in e and returns root and "A.B".
func fieldOf(e ast.Expr) (root, path string) {
	ast.Inspect(e, func(n ast.Node) bool {
		u, ok := n.(*ast.UnaryExpr)
		if !ok || u.Op != token.AND || root != "" {
			return root == ""
		}
		sel, ok := u.X.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		parts := strings.Split(exprString(sel), ".")
		root, path = parts[0], strings.Join(parts[1:], ".")
		return false
	})
	// metav1.Duration fields are bound through their time.Duration.
	return root, strings.TrimSuffix(path, ".Duration")
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

func exprString(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.SelectorExpr:
		return exprString(v.X) + "." + v.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(v.X)
	case *ast.ParenExpr:
		return exprString(v.X)
	case *ast.CallExpr:
		return exprString(v.Fun) + "(...)"
	}
	return fmt.Sprintf("%T", e)
}
