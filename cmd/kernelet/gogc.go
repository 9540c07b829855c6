package main

import (
	"os"
	"runtime/debug"
)

// DefaultGOGC is the Go garbage collector's target of `kernelet run` when
// $GOGC is not set: 50 instead of Go's 100. The agent's live heap is small
// (about 5 MiB idle with 10 pods) and at 100 the heap grows to twice the
// live heap between collections; at 50 to one and a half. For a node
// daemon a few MiB of RSS on every node are worth more than the extra
// collections of a small heap (bench: make bench-footprint reports both the
// RSS and the CPU against the kubelet's). An operator sets $GOGC (or
// $GOMEMLIMIT) to choose otherwise.
const DefaultGOGC = 50

// setDefaultGOGC applies DefaultGOGC unless $GOGC chose a value; it returns
// the percentage in effect.
func setDefaultGOGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		pct := debug.SetGCPercent(-1) // read the value in effect...
		debug.SetGCPercent(pct)       // ...and keep it
		return pct
	}
	debug.SetGCPercent(DefaultGOGC)
	return DefaultGOGC
}
