package eviction

import (
	"strings"
	"testing"
	"time"
)

func TestParseThresholds(t *testing.T) {
	cases := map[string]struct {
		cfg      Config
		want     []string // "signal<value grace minreclaim"
		wantErrs []string // substrings, one per expected error
	}{
		"kubelet defaults": {
			cfg:  Config{Hard: DefaultHard()},
			want: []string{"imagefs.available<15% 0s -", "imagefs.inodesFree<5% 0s -", "memory.available<100Mi 0s -", "nodefs.available<10% 0s -", "nodefs.inodesFree<5% 0s -"},
		},
		"mirror allocatable with min-reclaim": {
			cfg: Config{
				Hard:              map[string]string{"memory.available": "200Mi"},
				MinimumReclaim:    map[string]string{"memory.available": "50Mi", "allocatableMemory.available": "5%"},
				MirrorAllocatable: true,
			},
			want: []string{"memory.available<200Mi 0s 50Mi", "allocatableMemory.available<200Mi 0s 5%"},
		},
		"soft with grace": {
			cfg: Config{
				Soft:            map[string]string{"memory.available": "1.5Gi", "pid.available": "10%"},
				SoftGracePeriod: map[string]string{"memory.available": "1m30s", "pid.available": "10s"},
			},
			want: []string{"memory.available<1536Mi 1m30s -", "pid.available<10% 10s -"},
		},
		"0% and 100% switch off": {
			cfg:  Config{Hard: map[string]string{"nodefs.available": "0%", "imagefs.available": "100%"}},
			want: nil,
		},
		"bad quantity": {
			cfg:      Config{Hard: map[string]string{"memory.available": "lots"}},
			wantErrs: []string{`evictionHard[memory.available]: Invalid value: "lots": must be a quantity`},
		},
		"exponent out of range": {
			// resource.ParseQuantity alone spends minutes on this one.
			cfg:      Config{Hard: map[string]string{"memory.available": "1e-2000000000"}},
			wantErrs: []string{`evictionHard[memory.available]: Invalid value: "1e-2000000000": must be a quantity (e.g. 100Mi) or a percentage (e.g. 10%): exponent -2000000000 out of range [-64, 64]`},
		},
		"negative quantity": {
			cfg:      Config{Hard: map[string]string{"memory.available": "-1Mi"}},
			wantErrs: []string{`evictionHard[memory.available]: Invalid value: "-1Mi": quantity must not be negative`},
		},
		"percentage over 100": {
			cfg:      Config{Soft: map[string]string{"nodefs.available": "120%"}, SoftGracePeriod: map[string]string{"nodefs.available": "1m"}},
			wantErrs: []string{`evictionSoft[nodefs.available]: Invalid value: "120%": percentage must not exceed 100%`},
		},
		"unknown signal": {
			cfg:      Config{Hard: map[string]string{"memory.free": "1Gi"}},
			wantErrs: []string{`evictionHard[memory.free]: Unsupported value: "memory.free"`},
		},
		"soft without grace": {
			cfg:      Config{Soft: map[string]string{"memory.available": "1Gi"}},
			wantErrs: []string{`evictionSoftGracePeriod[memory.available]: Required value: soft eviction threshold "memory.available" needs a grace period`},
		},
		"grace without soft, bad grace": {
			cfg: Config{
				Soft:            map[string]string{"memory.available": "1Gi"},
				SoftGracePeriod: map[string]string{"memory.available": "-5s", "nodefs.available": "1m"},
			},
			wantErrs: []string{
				`evictionSoftGracePeriod[nodefs.available]: Invalid value: "1m": grace period given for signal "nodefs.available", which has no evictionSoft threshold`,
				`evictionSoftGracePeriod[memory.available]: Invalid value: "-5s": must be greater than zero`,
			},
		},
		"bad min-reclaim": {
			cfg:      Config{MinimumReclaim: map[string]string{"memory.available": "x"}},
			wantErrs: []string{`evictionMinimumReclaim[memory.available]: Invalid value: "x"`},
		},
		"all errors at once": {
			cfg: Config{
				Hard: map[string]string{"memory.available": "lots", "nodefs.available": "-3%"},
			},
			wantErrs: []string{`evictionHard[memory.available]`, `evictionHard[nodefs.available]: Invalid value: "-3%": percentage must not be negative`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseThresholds(tc.cfg)
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("got %d errors %v, want %d %v", len(errs), errs, len(tc.wantErrs), tc.wantErrs)
			}
			for i, want := range tc.wantErrs {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
			if tc.wantErrs != nil {
				return
			}
			var gotS []string
			for _, th := range got {
				mr := "-"
				if th.MinReclaim != nil {
					mr = th.MinReclaim.String()
				}
				if th.Operator != OpLessThan {
					t.Errorf("%s: operator %q", th.Signal, th.Operator)
				}
				gotS = append(gotS, string(th.Signal)+"<"+th.Value.String()+" "+th.GracePeriod.String()+" "+mr)
			}
			if strings.Join(gotS, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("thresholds:\n%s\nwant:\n%s", strings.Join(gotS, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestThresholdHard(t *testing.T) {
	if !(Threshold{}).Hard() || (Threshold{GracePeriod: time.Second}).Hard() {
		t.Fatal("Hard() must be true exactly when there is no grace period")
	}
}
