package eviction

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzParseThresholds: no map of eviction settings panics the parser; every
// threshold it returns is of a known signal with exactly one kind of value,
// and every error is under one of the four eviction fields. The same maps
// as a KerneletConfiguration's (PSI) give only PSI thresholds, above a
// percentage in (0, 1), with every error under KerneletConfiguration.
func FuzzParseThresholds(f *testing.F) {
	f.Add("memory.available", "100Mi", "nodefs.available", "10%", "1m30s", "imagefs.available", "2Gi")
	f.Add("pid.available", "5%", "memory.available", "1.5Gi", "90s", "memory.available", "0%")
	f.Add("bogus", "lots", "memory.available", "-1", "-1s", "nodefs.inodesFree", "100%")
	f.Add("kubepods.memory.pressure.some.avg10", "20%", "io.pressure.full.avg10", "50", "30s", "kubepods.memory.pressure.some.avg10", "5%")
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
		psi(t, c)
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

func psi(t *testing.T, c Config) {
	c.PSI, c.MirrorAllocatable = true, false
	c.Path = field.NewPath("KerneletConfiguration")
	ths, errs := ParseThresholds(c)
	for _, th := range ths {
		if !th.Signal.PSI() || th.Operator != OpGreaterThan || th.Value.Quantity != nil || th.Value.Percentage <= 0 || th.Value.Percentage >= 1 {
			t.Fatalf("PSI threshold %+v", th)
		}
	}
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "KerneletConfiguration.eviction") {
			t.Fatalf("PSI error outside the kernelet document's eviction fields: %v", e)
		}
	}
}
