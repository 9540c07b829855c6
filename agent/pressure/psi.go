package pressure

import (
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// hasPSIThresholds reports whether a threshold watches a PSI signal (the
// PSI files are read at each decision only then).
func hasPSIThresholds(ths []eviction.Threshold) bool {
	for _, t := range ths {
		if t.Signal.PSI() {
			return true
		}
	}
	return false
}

// psiStats are the avg10 values the PSI signals observe from p.
func psiStats(p cgroups.PressureStats) *eviction.PSIStats {
	v := func(l cgroups.PressureLine) eviction.PSIValue {
		return eviction.PSIValue{Known: l.Known, Avg10: l.Avg10}
	}
	return &eviction.PSIStats{MemorySome: v(p.Memory.Some), MemoryFull: v(p.Memory.Full), IOFull: v(p.IO.Full), CPUSome: v(p.CPU.Some)}
}
