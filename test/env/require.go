package env

import (
	"os"
	"strconv"
	"testing"
)

// InCI reports whether the run is a CI run (CI=true), where tests that need
// a real component must fail instead of skipping.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Require skips the test when ok is false, naming what is missing, or fails
// it under CI=true: CI must prove that real-component tests ran. With -short
// (make test-unit) a test that needs a real component always skips.
func Require(t testing.TB, ok bool, missing string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: unit tests only; this test needs %s", missing)
	}
	if ok {
		return
	}
	if InCI() {
		t.Fatalf("prerequisite missing under CI=true (tests may not skip in CI): %s", missing)
	}
	t.Skipf("prerequisite missing: %s", missing)
}

// RequireRoot requires the test process to run as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "root privileges (run as root)")
}
