package config

import (
	"errors"
	"strings"
	"testing"
)

const (
	swapsHeader = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	swapsOne    = swapsHeader + "/swapfile                               file\t\t1048572\t\t0\t\t-2\n"
)

func TestSwapOn(t *testing.T) {
	for name, tc := range map[string]struct {
		swaps string
		want  bool
	}{
		"header only":     {swapsHeader, false},
		"no file":         {"", false},
		"one swap file":   {swapsOne, true},
		"trailing blanks": {swapsHeader + "\n\n", false},
	} {
		if got := SwapOn([]byte(tc.swaps)); got != tc.want {
			t.Errorf("%s: %t, want %t", name, got, tc.want)
		}
	}
}

// kubelet's failSwapOn check, and kernelet's refusal of swap without it.
func TestCheckHostSwap(t *testing.T) {
	read := func(s string, err error) func() ([]byte, error) {
		return func() ([]byte, error) { return []byte(s), err }
	}
	cases := map[string]struct {
		failSwapOn *bool
		swaps      func() ([]byte, error)
		want       string // "" when the host fits
		noAcct     bool   // the memory cgroups do not account swap
		limited    bool   // swapBehavior LimitedSwap
		v1         bool   // memory controller on cgroup v1
	}{
		"swap off":                    {failSwapOn: nil, swaps: read(swapsHeader, nil), want: ""},
		"swap off, failSwapOn false":  {failSwapOn: ptrTo(false), swaps: read(swapsHeader, nil), want: ""},
		"no /proc/swaps":              {failSwapOn: nil, swaps: read("", nil), want: ""},
		"not checked":                 {failSwapOn: nil, swaps: nil, want: ""},
		"swap on, failSwapOn default": {failSwapOn: nil, swaps: read(swapsOne, nil), want: "failSwapOn: Invalid value: true: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"},
		"swap on, failSwapOn true":    {failSwapOn: ptrTo(true), swaps: read(swapsOne, nil), want: "failSwapOn: Invalid value: true: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"},
		"swap on, failSwapOn false":   {failSwapOn: ptrTo(false), swaps: read(swapsOne, nil)},
		"swap on, no accounting":      {failSwapOn: ptrTo(false), swaps: read(swapsOne, nil), noAcct: true, want: "failSwapOn: Invalid value: false: swap is on, but the memory cgroups do not account swap (no memory.swap.max, or memory.memsw.limit_in_bytes without swapaccount=1): containers' swap cannot be limited; disable swap or enable swap accounting"},
		"LimitedSwap on v2":           {failSwapOn: ptrTo(false), swaps: read(swapsOne, nil), limited: true},
		"LimitedSwap on v1":           {failSwapOn: ptrTo(false), swaps: read(swapsOne, nil), limited: true, v1: true, want: `memorySwap.swapBehavior: Invalid value: "LimitedSwap": LimitedSwap needs the memory controller on cgroup v2 (memory.swap.max); this host's is on cgroup v1`},
		"unreadable":                  {failSwapOn: nil, swaps: read("", errors.New("permission denied")), want: "failSwapOn: Internal error: failed to determine if swap is on: permission denied"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := Default()
			cfg.Kubelet.FailSwapOn = tc.failSwapOn
			if tc.limited {
				cfg.Kubelet.MemorySwap.SwapBehavior = "LimitedSwap"
			}
			errs := CheckHost(cfg, Host{PID1: "systemd", FileExists: func(string) bool { return true }, ProcSwaps: tc.swaps,
				SwapAccounting: !tc.noAcct, MemoryCgroupV2: !tc.v1})
			switch {
			case tc.want == "" && len(errs) != 0:
				t.Errorf("want no error, got %v", errs)
			case tc.want != "" && (len(errs) != 1 || errs[0].Error() != tc.want):
				t.Errorf("errors %v\nwant %s", errs, tc.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestCheckHostKernelDefaults(t *testing.T) {
	vals := map[string]int{"vm/overcommit_memory": 1, "vm/panic_on_oom": 0, "kernel/panic": 10, "kernel/panic_on_oops": 1,
		"kernel/keys/root_maxkeys": 1000000, "kernel/keys/root_maxbytes": 25000000}
	sysctl := func(n string) (int, error) { return vals[n], nil }
	cfg := Default()
	cfg.Kubelet.ProtectKernelDefaults = true
	h := Host{PID1: "systemd", FileExists: func(string) bool { return true }, Sysctl: sysctl}
	if errs := CheckHost(cfg, h); len(errs) != 0 {
		t.Fatalf("kubelet's values: %v", errs)
	}
	vals["kernel/panic"] = 0
	errs := CheckHost(cfg, h)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "invalid kernel flag: kernel/panic, expected value: 10, actual value: 0") {
		t.Errorf("kernel.panic 0: %v", errs)
	}
	cfg.Kubelet.ProtectKernelDefaults = false
	if errs := CheckHost(cfg, h); len(errs) != 0 {
		t.Errorf("without protectKernelDefaults: %v", errs)
	}
}
