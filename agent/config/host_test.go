package config

import (
	"errors"
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
	}{
		"swap off":                    {nil, read(swapsHeader, nil), ""},
		"swap off, failSwapOn false":  {ptrTo(false), read(swapsHeader, nil), ""},
		"no /proc/swaps":              {nil, read("", nil), ""},
		"not checked":                 {nil, nil, ""},
		"swap on, failSwapOn default": {nil, read(swapsOne, nil), "failSwapOn: Invalid value: true: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"},
		"swap on, failSwapOn true":    {ptrTo(true), read(swapsOne, nil), "failSwapOn: Invalid value: true: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"},
		"swap on, failSwapOn false":   {ptrTo(false), read(swapsOne, nil), "failSwapOn: Invalid value: false: swap is on, and kernelet sets no swap limit on containers (kubelet's NoSwap, memory.swap.max 0): pods could swap; disable swap"},
		"unreadable":                  {nil, read("", errors.New("permission denied")), "failSwapOn: Internal error: failed to determine if swap is on: permission denied"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := Default()
			cfg.Kubelet.FailSwapOn = tc.failSwapOn
			errs := CheckHost(cfg, Host{PID1: "systemd", FileExists: func(string) bool { return true }, ProcSwaps: tc.swaps})
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
