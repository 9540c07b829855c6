//go:build !amd64

package vm

// hostTSCkHz: on other hosts the emulated TSC does not tick at a rate
// this package knows; the guest kernel calibrates it.
func hostTSCkHz() uint64 { return 0 }
