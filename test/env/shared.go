package env

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

var (
	shutdownMu sync.Mutex
	shutdowns  []func() error
)

// OnShutdown registers fn to run when Main returns (last registered runs
// first). Components shared by the tests of one binary register their Stop
// here, so they are torn down even when a test fails or panics in cleanup.
func OnShutdown(fn func() error) {
	shutdownMu.Lock()
	defer shutdownMu.Unlock()
	shutdowns = append(shutdowns, fn)
}

// Shutdown runs every registered shutdown function once, newest first, and
// joins their errors.
func Shutdown() error {
	shutdownMu.Lock()
	fns := shutdowns
	shutdowns = nil
	shutdownMu.Unlock()
	var errs []error
	for i := len(fns) - 1; i >= 0; i-- {
		if err := fns[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Main runs the tests of a package that uses shared components and tears
// those components down afterwards. Use it as:
//
//	func TestMain(m *testing.M) { os.Exit(env.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if err := Shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "test environment teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
