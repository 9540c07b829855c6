package e2e

import (
	"testing"

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
