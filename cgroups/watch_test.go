package cgroups

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

func TestWatchTriggerString(t *testing.T) {
	cases := map[string]struct {
		trig PressureTrigger
		want string
	}{
		"psi.rst example":     {PressureTrigger{TriggerSome, 150 * time.Millisecond, time.Second}, "some 150000 1000000"},
		"full, 2 s window":    {PressureTrigger{TriggerFull, 200 * time.Millisecond, 2 * time.Second}, "full 200000 2000000"},
		"sub-µs is truncated": {PressureTrigger{TriggerSome, 1500 * time.Nanosecond, 500 * time.Millisecond}, "some 1 500000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.trig.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			// The kernel overwrites the last byte written with a NUL: the
			// written form must end in one of its own.
			if got, want := string(tc.trig.bytes()), tc.want+"\x00"; got != want {
				t.Errorf("bytes() = %q, want %q", got, want)
			}
		})
	}
}

func TestWatchTriggerValidate(t *testing.T) {
	cases := map[string]struct {
		trig    PressureTrigger
		wantErr string // "" for valid
	}{
		"valid privileged":      {PressureTrigger{TriggerSome, 150 * time.Millisecond, time.Second}, ""},
		"valid 10 s":            {PressureTrigger{TriggerFull, 10 * time.Second, 10 * time.Second}, ""},
		"valid short window":    {PressureTrigger{TriggerSome, 10 * time.Millisecond, 100 * time.Millisecond}, ""},
		"unknown kind":          {PressureTrigger{"avg10", 150 * time.Millisecond, time.Second}, "kind"},
		"empty kind":            {PressureTrigger{"", 150 * time.Millisecond, time.Second}, "kind"},
		"zero stall":            {PressureTrigger{TriggerSome, 0, time.Second}, "stall must be"},
		"sub-µs stall":          {PressureTrigger{TriggerSome, 999, time.Second}, "stall must be"},
		"zero window":           {PressureTrigger{TriggerSome, 150 * time.Millisecond, 0}, "window"},
		"window over 10 s":      {PressureTrigger{TriggerSome, 150 * time.Millisecond, 12 * time.Second}, "window"},
		"stall exceeds window":  {PressureTrigger{TriggerSome, 2 * time.Second, time.Second}, "exceeds"},
		"negative stall":        {PressureTrigger{TriggerSome, -time.Millisecond, time.Second}, "stall must be"},
		"stall equal to window": {PressureTrigger{TriggerSome, time.Second, time.Second}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.trig.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestWatchUnprivilegedTrigger(t *testing.T) {
	cases := map[string]struct {
		in          PressureTrigger
		want        PressureTrigger
		wantChanged bool
	}{
		"500 time.Millisecond → 2 s, ratio kept": {
			PressureTrigger{TriggerSome, 50 * time.Millisecond, 500 * time.Millisecond}, PressureTrigger{TriggerSome, 200 * time.Millisecond, 2 * time.Second}, true},
		"1 s rounds half-way up to 2 s": {
			PressureTrigger{TriggerSome, 150 * time.Millisecond, time.Second}, PressureTrigger{TriggerSome, 300 * time.Millisecond, 2 * time.Second}, true},
		"2 s is already fine": {
			PressureTrigger{TriggerFull, 100 * time.Millisecond, 2 * time.Second}, PressureTrigger{TriggerFull, 100 * time.Millisecond, 2 * time.Second}, false},
		"10 s is already fine": {
			PressureTrigger{TriggerSome, time.Second, 10 * time.Second}, PressureTrigger{TriggerSome, time.Second, 10 * time.Second}, false},
		"2.9 s → 2 s, stall scaled down": {
			PressureTrigger{TriggerSome, 290 * time.Millisecond, 2900 * time.Millisecond}, PressureTrigger{TriggerSome, 200 * time.Millisecond, 2 * time.Second}, true},
		"3 s rounds half-way up to 4 s": {
			PressureTrigger{TriggerSome, 300 * time.Millisecond, 3 * time.Second}, PressureTrigger{TriggerSome, 400 * time.Millisecond, 4 * time.Second}, true},
		"9.5 s → 10 s": {
			PressureTrigger{TriggerFull, 950 * time.Millisecond, 9500 * time.Millisecond}, PressureTrigger{TriggerFull, time.Second, 10 * time.Second}, true},
		"over 10 s is capped at 10 s": {
			PressureTrigger{TriggerSome, 11 * time.Second, 11 * time.Second}, PressureTrigger{TriggerSome, 10 * time.Second, 10 * time.Second}, true},
		"stall = window stays ≤ window": {
			PressureTrigger{TriggerSome, 700 * time.Millisecond, 700 * time.Millisecond}, PressureTrigger{TriggerSome, 2 * time.Second, 2 * time.Second}, true},
		"tiny stall keeps at least 1 µs": {
			PressureTrigger{TriggerSome, time.Microsecond, 3100 * time.Millisecond}, PressureTrigger{TriggerSome, time.Microsecond, 4 * time.Second}, true},
		"tiny window": {
			PressureTrigger{TriggerSome, 1 * time.Millisecond, 100 * time.Millisecond}, PressureTrigger{TriggerSome, 20 * time.Millisecond, 2 * time.Second}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, changed := UnprivilegedTrigger(tc.in)
			if got != tc.want || changed != tc.wantChanged {
				t.Errorf("UnprivilegedTrigger(%v) = %v, %t; want %v, %t", tc.in, got, changed, tc.want, tc.wantChanged)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("fallback %v is not valid: %v", got, err)
			}
			if got.Window%UnprivilegedTriggerWindow != 0 {
				t.Errorf("fallback window %v is not a multiple of 2s", got.Window)
			}
		})
	}
}

func TestParseWatchCounters(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    map[string]uint64
		wantErr bool
	}{
		"v2 memory.events": {
			in:   "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n",
			want: map[string]uint64{"low": 0, "high": 12, "max": 3, "oom": 1, "oom_kill": 1, "oom_group_kill": 0},
		},
		"v1 memory.oom_control": {
			in:   "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
			want: map[string]uint64{"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 2},
		},
		"empty":                     {in: "", want: map[string]uint64{}},
		"blank lines, no final \\n": {in: "\nmax 1\n\noom 2", want: map[string]uint64{"max": 1, "oom": 2}},
		"max uint64":                {in: "max 18446744073709551615\n", want: map[string]uint64{"max": 1<<64 - 1}},
		"three fields":              {in: "oom 1 2\n", wantErr: true},
		"not a number":              {in: "oom x\n", wantErr: true},
		"negative":                  {in: "oom -1\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseWatchCounters([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseWatchCounters() error = %v, want error %t", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(got, tc.want) {
				t.Errorf("parseWatchCounters() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWatchPressureFile(t *testing.T) {
	hybrid := &Hierarchies{Mode: Hybrid, Unified: &Mount{Path: "/sys/fs/cgroup/unified", Root: "/", Version: 2},
		V1: map[string]*Mount{"memory": {Path: "/sys/fs/cgroup/memory", Root: "/", Version: 1}}}
	container := &Hierarchies{Mode: Unified, Unified: &Mount{Path: "/sys/fs/cgroup", Root: "/kubepods/pod1", Version: 2}}
	legacy := &Hierarchies{Mode: Legacy, V1: map[string]*Mount{"memory": {Path: "/sys/fs/cgroup/memory", Root: "/", Version: 1}}}
	cases := map[string]struct {
		h       *Hierarchies
		cgroup  string
		res     string
		want    string
		wantErr error // nil: any error when want is ""
	}{
		"system-wide":                  {hybrid, "", "memory", "/proc/pressure/memory", nil},
		"system-wide for /":            {legacy, "/", "io", "/proc/pressure/io", nil},
		"hybrid: the unified tree":     {hybrid, "/kubepods/burstable", "memory", "/sys/fs/cgroup/unified/kubepods/burstable/memory.pressure", nil},
		"cpu":                          {hybrid, "/a", "cpu", "/sys/fs/cgroup/unified/a/cpu.pressure", nil},
		"sub-tree mount":               {container, "/kubepods/pod1/c1", "io", "/sys/fs/cgroup/c1/io.pressure", nil},
		"outside the sub-tree":         {container, "/other", "io", "", nil},
		"legacy has no per-cgroup PSI": {legacy, "/a", "memory", "", ErrWatchUnsupported},
		"unknown resource":             {hybrid, "/a", "irq", "", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PressureFile(tc.h, tc.cgroup, tc.res)
			if tc.want == "" {
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("PressureFile() = %q, %v; want error %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("PressureFile() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
