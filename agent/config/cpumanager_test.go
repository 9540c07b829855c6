package config

import (
	"errors"
	"strings"
	"testing"
)

func TestCPUManagerConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want []string // errors; none: loads
	}{
		"static with reserved cpus": {yaml: "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\ncpuManagerPolicyOptions: {full-pcpus-only: \"true\", strict-cpu-reservation: \"false\"}"},
		"options kernelet lacks": {yaml: "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ncpuManagerPolicyOptions: {align-by-socket: \"true\", bogus: \"1\"}",
			want: []string{`cpuManagerPolicyOptions: Invalid value: 2: CPU Manager Policy option "align-by-socket": kernelet does not support it`,
				`cpuManagerPolicyOptions: Invalid value: 2: unknown CPU Manager Policy option: "bogus"`}},
		"reserved cpus with a reserved cgroup": {yaml: "reservedSystemCPUs: \"0\"\nsystemReservedCgroup: /system.slice",
			want: []string{`can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup`}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse("cfg.yaml", []byte(header+tc.yaml+"\n"))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Errs) != len(tc.want) {
				t.Fatalf("want %d errors, got %v (cfg %v)", len(tc.want), err, cfg != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in %v", w, err)
				}
			}
		})
	}
}

// reservedSystemCPUs wins over the reserved cpu amounts, as in kubelet:
// allocatable loses exactly those CPUs.
func TestReservedSystemCPUsOverride(t *testing.T) {
	cfg, err := Parse("cfg.yaml", []byte(header+"reservedSystemCPUs: \"0,2-3\"\nkubeReserved: {cpu: 500m, memory: 100Mi}\nsystemReserved: {cpu: 200m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	kc := &cfg.Kubelet
	if _, ok := kc.KubeReserved["cpu"]; ok || kc.KubeReserved["memory"] != "100Mi" || kc.SystemReserved["cpu"] != "3" {
		t.Fatalf("kubeReserved %v systemReserved %v", kc.KubeReserved, kc.SystemReserved)
	}
	if n := NumReservedCPUs(kc); n != 3 {
		t.Fatalf("NumReservedCPUs = %d", n)
	}
	if s := ReservedSystemCPUs(kc).String(); s != "0,2-3" {
		t.Fatalf("ReservedSystemCPUs = %s", s)
	}
	cfg, _ = Parse("cfg.yaml", []byte(header+"kubeReserved: {cpu: 500m}\nsystemReserved: {cpu: 700m}\n"))
	if n := NumReservedCPUs(&cfg.Kubelet); n != 2 {
		t.Fatalf("1.2 CPUs reserved rounds to %d, want 2", n)
	}
}
