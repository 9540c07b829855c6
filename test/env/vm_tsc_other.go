//go:build !amd64

package env

// vmHostTSCkHz: on other hosts the emulated TSC does not tick at a rate
// this package knows; the guest kernel calibrates it.
func vmHostTSCkHz() uint64 { return 0 }
