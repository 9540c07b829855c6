package eviction

import (
	"strings"
	"testing"
)

// FuzzParseThresholds: no map of eviction settings panics the parser; every
// threshold it returns is of a known signal with exactly one kind of value,
// and every error is under one of the four eviction fields.
func FuzzParseThresholds(f *testing.F) {
	f.Add("memory.available", "100Mi", "nodefs.available", "10%", "1m30s", "imagefs.available", "2Gi")
	f.Add("pid.available", "5%", "memory.available", "1.5Gi", "90s", "memory.available", "0%")
	f.Add("bogus", "lots", "memory.available", "-1", "-1s", "nodefs.inodesFree", "100%")
	f.Fuzz(func(t *testing.T, hardKey, hardVal, softKey, softVal, grace, minKey, minVal string) {
		c := Config{
			Hard:              map[string]string{hardKey: hardVal},
			Soft:              map[string]string{softKey: softVal},
			SoftGracePeriod:   map[string]string{softKey: grace},
			MinimumReclaim:    map[string]string{minKey: minVal},
			MirrorAllocatable: len(hardVal)%2 == 0,
		}
		ths, errs := ParseThresholds(c)
		for _, th := range ths {
			if !th.Signal.Known() {
				t.Fatalf("threshold of unknown signal %q", th.Signal)
			}
			if (th.Value.Quantity == nil) == (th.Value.Percentage == 0) {
				t.Fatalf("threshold %s: want exactly one of quantity and percentage: %+v", th.Signal, th.Value)
			}
			if th.Value.Percentage < 0 || th.Value.Percentage >= 1 {
				t.Fatalf("threshold %s: percentage %v out of (0, 1)", th.Signal, th.Value.Percentage)
			}
		}
		for _, e := range errs {
			ok := false
			for _, f := range []string{FieldHard, FieldSoft, FieldSoftGracePeriod, FieldMinimumReclaim} {
				ok = ok || strings.HasPrefix(e.Field, f)
			}
			if !ok {
				t.Fatalf("error outside the eviction fields: %v", e)
			}
		}
	})
}
