package repo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ModulePath is kernelet's module, used to recognise the repository root.
const ModulePath = "github.com/kernelet/kernelet"

// Root returns the root of the kernelet repository: the nearest directory
// above the working directory (tests run in their package directory) whose
// go.mod declares ModulePath, else the one above this source file.
func Root() (string, error) {
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		if root, ok := rootAbove(wd); ok {
			return root, nil
		}
		tried = append(tried, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if root, ok := rootAbove(filepath.Dir(file)); ok {
			return root, nil
		}
		tried = append(tried, filepath.Dir(file))
	}
	return "", fmt.Errorf("no go.mod of module %s above %v: run from inside the repository", ModulePath, tried)
}

// File returns the path of rel (slash-separated, relative to the repository
// root) if it is a regular file there.
func File(rel string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s not found in the kernelet repository %s", rel, root)
	}
	return p, nil
}

func rootAbove(dir string) (string, bool) {
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(data, ModulePath) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func declaresModule(gomod []byte, path string) bool {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == path
		}
	}
	return false
}
