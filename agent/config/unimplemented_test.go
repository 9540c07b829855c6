package config

import (
	"errors"
	"testing"
	"time"
)

// Each field that asks for something kernelet lacks is refused by its
// path with the reason; the defaults and kubelet's "off" values pass.
func TestUnimplementedFields(t *testing.T) {
	cases := map[string]struct {
		yaml string
		want string // "" when the file must load
	}{
		"cpu manager static, nothing reserved": {"cpuManagerPolicy: static",
			`cpuManagerPolicy: Invalid value: "static": the static policy requires systemReserved.cpu + kubeReserved.cpu (or reservedSystemCPUs) to be greater than zero`},
		"cpu manager static":  {"cpuManagerPolicy: static\nsystemReserved: {cpu: 500m}", ""},
		"cpu manager unknown": {"cpuManagerPolicy: dynamic", `cpuManagerPolicy: Unsupported value: "dynamic": supported values: "none", "static"`},
		"cpu manager none":    {"cpuManagerPolicy: none", ""},
		"memory manager static, nothing reserved": {"memoryManagerPolicy: Static",
			`reservedMemory: Required value: the Static memory manager policy needs the memory reserved per NUMA node (kubelet's --reserved-memory)`},
		"memory manager static":      {"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]", ""},
		"memory manager best effort": {"memoryManagerPolicy: BestEffort", `memoryManagerPolicy: Unsupported value: "BestEffort": supported values: "None", "Static"`},
		"reserved memory resource":   {"reservedMemory: [{numaNode: 0, limits: {cpu: \"1\"}}]", `reservedMemory[0].limits[cpu]: Unsupported value: "cpu": supported values: "memory", "hugepages-<size>"`},
		"memory manager none":        {"memoryManagerPolicy: None", ""},
		"topology manager":           {"topologyManagerPolicy: single-numa-node", ""},
		"topology manager unknown":   {"topologyManagerPolicy: numa-everywhere", `topologyManagerPolicy: Unsupported value: "numa-everywhere": supported values: "none", "best-effort", "restricted", "single-numa-node"`},
		"topology manager options": {"topologyManagerPolicyOptions: {prefer-closest-numa-nodes: \"true\"}",
			`topologyManagerPolicyOptions: Invalid value: 1: topology manager policy option "prefer-closest-numa-nodes": kernelet does not support it`},
		"topology manager none":           {"topologyManagerPolicy: none", ""},
		"limited swap (checked at start)": {"memorySwap: {swapBehavior: LimitedSwap}", ""},
		"unknown swap":                    {"memorySwap: {swapBehavior: Unlimited}", `memorySwap.swapBehavior: Unsupported value: "Unlimited": supported values: "", "LimitedSwap", "NoSwap"`},
		"no swap":                         {"memorySwap: {swapBehavior: NoSwap}", ""},
		"shutdown grace period":           {"shutdownGracePeriod: 30s", `shutdownGracePeriod: Invalid value: "30s": kernelet has no graceful node shutdown: only 0 (off) is supported`},
		"shutdown grace period off":       {"shutdownGracePeriod: 0s", ""},
		"shutdown by priority": {"shutdownGracePeriodByPodPriority: [{priority: 1000, shutdownGracePeriodSeconds: 20}]",
			`shutdownGracePeriodByPodPriority: Invalid value: 1: kernelet has no graceful node shutdown: must be empty`},
		"system log query":        {"enableSystemLogQuery: true", `enableSystemLogQuery: Invalid value: true: kernelet has no node log query: only false is supported`},
		"system log query off":    {"enableSystemLogQuery: false", ""},
		"crash loop cap":          {"crashLoopBackOff: {maxContainerRestartPeriod: 60s}", ""},
		"crash loop cap too long": {"crashLoopBackOff: {maxContainerRestartPeriod: 600s}", `crashLoopBackOff.maxContainerRestartPeriod: Invalid value: "10m0s": must be set between 1s and 300s`},
		"credential verification": {"imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages",
			`imagePullCredentialsVerificationPolicy: Invalid value: "NeverVerifyPreloadedImages": kernelet does not verify the pull credentials of images already on the node: only "NeverVerify" (or unset) is supported`},
		"credential verification never":   {"imagePullCredentialsVerificationPolicy: NeverVerify", ""},
		"fail swap on (checked at start)": {"failSwapOn: true", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("cfg.yaml", []byte(header+tc.yaml+"\n"))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("must load: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Errs) != 1 {
				t.Fatalf("want one validation error, got %v", err)
			}
			if got := ce.Errs[0].Error(); got != tc.want {
				t.Errorf("error\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

// The conformance kit's KubeletConfiguration (/work/shared/conformance
// up.sh, as run against kubelet v1.33.13 and v1.37.2) keeps loading.
func TestConformanceKitConfigLoads(t *testing.T) {
	cfg, err := Load("testdata/conformance-kit.yaml")
	if err != nil {
		t.Fatalf("the conformance kit's config must load: %v", err)
	}
	// It turns kubelet's iptables chains off, which kernelet never makes:
	// one warning.
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "makeIPTablesUtilChains" {
		t.Errorf("want the one makeIPTablesUtilChains warning, got %v", cfg.Warnings)
	}
}

// TestKubeadmConfig: the KubeletConfiguration kubeadm v1.37 writes loads
// without warnings; nothing in it is refused but rotateCertificates: true
// while client certificate rotation is not wired in (issue 25).
func TestKubeadmConfig(t *testing.T) {
	cfg, err := Load("testdata/kubeadm-config.yaml")
	var ce *Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatal(err)
	}
	if ce != nil {
		for _, fe := range ce.Errs {
			if fe.Field != "rotateCertificates" {
				t.Errorf("kubeadm's config refused: %v", fe)
			}
		}
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	if kc := cfg.Kubelet; kc.Logging.FlushFrequency.Duration.Duration != 5*time.Second || kc.Logging.Format != "text" || kc.SyncFrequency.Duration != time.Minute {
		t.Errorf("kubeadm's zero values not defaulted as kubelet defaults them: flush %v format %q sync %v",
			kc.Logging.FlushFrequency.Duration.Duration, kc.Logging.Format, kc.SyncFrequency.Duration)
	}
}
