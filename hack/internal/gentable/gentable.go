// Package gentable is the command line shared by the generators of
// kernelet's tables from the Kubernetes sources in the Go module cache
// (hack/featuregates, hack/kubeletflags): -o FILE, -check, -modcache DIR;
// it writes the generated file or checks that the committed one matches.
package gentable

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Generate makes the file's contents from the module cache and a summary
// for the check's message ("kubernetes v1.37.2 (131 flags)").
type Generate func(modcache string) (src []byte, summary string, err error)

// Main runs the generator name (the directory under hack/) whose output
// is defaultOut, and exits non-zero on failure.
func Main(name, defaultOut string, gen Generate) {
	out := flag.String("o", defaultOut, "the Go file to write")
	check := flag.Bool("check", false, "do not write: fail if the file differs from what would be written")
	modcache := flag.String("modcache", "", "the Go module cache (default: go env GOMODCACHE)")
	flag.Parse()
	if err := run(name, *out, *check, *modcache, gen); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(name, out string, check bool, modcache string, gen Generate) error {
	if modcache == "" {
		b, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return fmt.Errorf("go env GOMODCACHE: %w", err)
		}
		modcache = strings.TrimSpace(string(b))
	}
	src, summary, err := gen(modcache)
	if err != nil {
		return err
	}
	if !check {
		return os.WriteFile(out, src, 0o644)
	}
	old, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if !bytes.Equal(old, src) {
		return fmt.Errorf("check: %s differs from the generator's output for %s: run go run ./hack/%s", out, summary, name)
	}
	fmt.Printf("%s: %s matches %s\n", name, out, summary)
	return nil
}
