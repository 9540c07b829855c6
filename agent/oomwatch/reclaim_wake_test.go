package oomwatch

import (
	"testing"
	"time"
)

func TestReclaimWakes(t *testing.T) {
	t0 := time.Unix(100, 0)
	for name, tc := range map[string]struct {
		d         time.Duration
		last, now time.Time
		want      bool
	}{
		"long stall, no wake yet":     {d: 20 * time.Millisecond, now: t0, want: true},
		"short stall":                 {d: time.Millisecond, now: t0, want: false},
		"long stall right after wake": {d: time.Second, last: t0, now: t0.Add(50 * time.Millisecond), want: false},
		"long stall later":            {d: reclaimWakeStall, last: t0, now: t0.Add(reclaimWakeEvery), want: true},
	} {
		if got := reclaimWakes(tc.d, tc.last, tc.now); got != tc.want {
			t.Errorf("%s: reclaimWakes = %v, want %v", name, got, tc.want)
		}
	}
}
