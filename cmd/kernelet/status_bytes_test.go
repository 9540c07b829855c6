package main

import (
	"math"
	"testing"

	"github.com/kernelet/kernelet/eviction"
)

func TestHumanBytes(t *testing.T) {
	for name, tc := range map[string]struct {
		in   int64
		want string
	}{
		"zero":                 {0, "0"},
		"below a Ki":           {1000, "1000"},
		"one Ki":               {1024, "1Ki"},
		"Ki with a decimal":    {1536, "1.5Ki"},
		"whole Mi":             {64 << 20, "64Mi"},
		"Gi, one decimal":      {80745016115, "75.2Gi"},
		"rounds down":          {100<<20 + 1, "100Mi"},
		"rounds half up":       {100<<20 + 52429, "100.1Mi"},
		"rounds up to next":    {1024<<10 - 1, "1Mi"},
		"Ti":                   {3 << 40, "3Ti"},
		"negative (overdrawn)": {-(5 << 20), "-5Mi"},
		"largest":              {math.MaxInt64, "8Ei"},
	} {
		if got := humanBytes(tc.in); got != tc.want {
			t.Errorf("%s: humanBytes(%d) = %q, want %q", name, tc.in, got, tc.want)
		}
	}
}

func TestThresholdLineAmounts(t *testing.T) {
	for name, tc := range map[string]struct {
		in   eviction.ThresholdStatus
		want string
	}{
		"memory in binary units": {eviction.ThresholdStatus{Signal: eviction.SignalMemoryAvailable, Threshold: "100Mi", Observed: true,
			Available: 80745016115, Quantity: 100 << 20}, "memory.available<100Mi: available 75.2Gi, threshold 100Mi"},
		"disk in binary units": {eviction.ThresholdStatus{Signal: eviction.SignalNodeFsAvailable, Threshold: "10%", Observed: true,
			Available: 5 << 30, Quantity: 1073741824 * 3 / 2}, "nodefs.available<10%: available 5Gi, threshold 1.5Gi"},
		"inodes are a count": {eviction.ThresholdStatus{Signal: eviction.SignalNodeFsInodesFree, Threshold: "5%", Observed: true,
			Available: 2000000, Quantity: 65536}, "nodefs.inodesFree<5%: available 2000000, threshold 65536"},
		"PIDs are a count": {eviction.ThresholdStatus{Signal: eviction.SignalPIDAvailable, Threshold: "10%", Observed: true,
			Available: 4000, Quantity: 3277}, "pid.available<10%: available 4000, threshold 3277"},
	} {
		if got := thresholdLine(tc.in); got != tc.want {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}
