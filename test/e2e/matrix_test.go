package e2e

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/containerd"
)

// The runtime matrix: every e2e test that does not need one containerd
// in particular runs against the flavor KERNELET_TEST_RUNTIME selects
// (containerd.Shared, and matrixFlavor for a containerd of a test's own);
// `make test` runs the package against containerd 1.6, then the tests of
// E2E_CONTAINERD2_RUN again against containerd 2 (docs/testing.md).

// matrixFlavor is the containerd flavor KERNELET_TEST_RUNTIME selects, for
// a test that starts a containerd of its own.
func matrixFlavor(t *testing.T) containerd.Flavor {
	t.Helper()
	f, err := containerd.DefaultFlavor()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// startOwnContainerd starts a containerd of flavor f of the test's own
// (one the test may stop and start), stopped at the end of the test.
func startOwnContainerd(t *testing.T, name string, f containerd.Flavor) *containerd.Instance {
	t.Helper()
	containerd.Require(t)
	cd, err := containerd.Start(t.Context(), containerd.Options{Name: name + "-" + strconv.Itoa(os.Getpid()), Flavor: f, Logf: t.Logf})
	if err != nil {
		t.Fatalf("start containerd (%s): %v", f, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cd.Stop(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return cd
}
