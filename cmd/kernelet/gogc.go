package main

import (
	"os"
	"runtime/debug"

	"github.com/kernelet/kernelet/agent/gctune"
)

// DefaultGOGC is the Go garbage collector's target of `kernelet run` at
// rest when $GOGC is not set: 50 instead of Go's 100. The agent's live
// heap is small (about 5 MiB idle with 10 pods) and at 100 the heap grows
// to twice the live heap between collections; at 50 to one and a half. For
// a node daemon a few MiB of RSS on every node are worth more than the
// extra collections of a small heap at rest. While pods churn, the agent
// allocates most and the collections cost CPU the node needs then:
// agent/gctune raises the target to Go's 100 from the first runtime change
// until 10 s after the last, then collects and returns the grown heap to
// the OS at once (bench: make bench-footprint reports RSS and
// CPU at rest, make bench-density both under churn, against the kubelet's).
// An operator sets $GOGC (or $GOMEMLIMIT) to choose otherwise; $GOGC also
// turns the tuning off.
const DefaultGOGC = gctune.DefaultIdle

// setDefaultGOGC applies DefaultGOGC unless $GOGC chose a value; it returns
// the percentage in effect and the tuner that follows the pod churn from
// there (nil when $GOGC is set).
func setDefaultGOGC() (int, *gctune.Tuner) {
	if _, set := os.LookupEnv("GOGC"); set {
		pct := debug.SetGCPercent(-1) // read the value in effect...
		debug.SetGCPercent(pct)       // ...and keep it
		return pct, nil
	}
	debug.SetGCPercent(DefaultGOGC)
	return DefaultGOGC, gctune.New(func(p int) { debug.SetGCPercent(p) }, debug.FreeOSMemory)
}
