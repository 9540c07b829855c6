package vm

import (
	"math"
	"sync"
	"time"
)

// rdtsc reads the time stamp counter.
func rdtsc() uint64

// hostTSCkHz measures the host's TSC rate in kHz, or returns 0 when the
// result is implausible. Under TCG the guest's TSC is the host's TSC (plus
// an offset), so the guest kernel can be told its TSC rate
// (tsc_early_khz=) instead of calibrating it against the emulated PIT: that
// calibration fails on a busy host ("tsc: Unable to calibrate against
// PIT", "Marking TSC unstable"), and the boot then hangs.
var hostTSCkHz = sync.OnceValue(measureTSCkHz)

func measureTSCkHz() uint64 {
	// sample pairs a TSC read with a clock read, keeping the tightest of
	// several brackets so a preemption in between does not count.
	sample := func() (uint64, time.Time) {
		var tsc uint64
		var at time.Time
		gap := uint64(math.MaxUint64)
		for range 64 {
			a := rdtsc()
			n := time.Now()
			b := rdtsc()
			if b > a && b-a < gap {
				gap, tsc, at = b-a, a+(b-a)/2, n
			}
		}
		return tsc, at
	}
	t0, n0 := sample()
	time.Sleep(25 * time.Millisecond)
	t1, n1 := sample()
	ns := n1.Sub(n0).Nanoseconds()
	if ns <= 0 || t1 <= t0 {
		return 0
	}
	khz := (t1 - t0) * 1_000_000 / uint64(ns)
	if khz < 100_000 || khz > 10_000_000 {
		return 0
	}
	return khz
}
