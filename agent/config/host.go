package config

import (
	"bytes"
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Host is what CheckHost needs to know about the machine, as plain values
// and small functions, so the decision stays testable.
type Host struct {
	// PID1 is the name of the init process (/proc/1/comm), e.g. "systemd".
	PID1 string
	// FileExists reports whether a path exists and is a regular file.
	FileExists func(path string) bool
	// LocalIPs lists the addresses of the host's interfaces (for
	// --node-ip); nil skips that check.
	LocalIPs func() ([]net.IP, error)
	// ProcSwaps reads /proc/swaps (nil content, no error when the file
	// does not exist); nil skips the swap check.
	ProcSwaps func() ([]byte, error)
	// MemoryCgroupV2 tells that the memory controller is on cgroup v2.
	MemoryCgroupV2 bool
	// Sysctl reads a kernel tunable (/proc/sys/<name>); nil skips the
	// protectKernelDefaults check.
	Sysctl func(name string) (int, error)
	// CgroupV1 tells that the host is not in the pure cgroup v2 layout
	// (legacy or hybrid hierarchies): kubelet's failCgroupV1 applies.
	CgroupV1 bool
	// SwapAccounting tells that the memory cgroups account swap (v1
	// memory.memsw.limit_in_bytes, v2 memory.swap.max), so that a
	// container's swap can be limited.
	SwapAccounting bool
}

// SwapOn tells from the content of /proc/swaps whether swap is on:
// kubelet's rule, more than its header line.
func SwapOn(procSwaps []byte) bool {
	return len(bytes.Split(bytes.TrimSpace(procSwaps), []byte("\n"))) > 1
}

// CheckHost returns every reason cfg cannot run on this host: the systemd
// cgroup driver without systemd as PID 1, files the configuration names that are missing, swap
// that is on with failSwapOn (kubelet's check) or where the memory cgroups
// do not account swap (no container's swap could be limited: kubelet
// would let pods swap), and memorySwap.swapBehavior LimitedSwap without
// the memory controller on cgroup v2 (kubelet gives no swap then).
func CheckHost(cfg *Config, h Host) field.ErrorList {
	kc := &cfg.Kubelet
	var errs field.ErrorList
	switch {
	case kc.CgroupDriver == "systemd" && h.PID1 != "systemd":
		errs = append(errs, field.Invalid(field.NewPath("cgroupDriver"), kc.CgroupDriver,
			fmt.Sprintf("needs systemd as PID 1, but PID 1 is %q; use cgroupfs", h.PID1)))
	}
	for _, f := range []struct {
		p    *field.Path
		file string
	}{
		{field.NewPath("authentication", "x509", "clientCAFile"), kc.Authentication.X509.ClientCAFile},
		{field.NewPath("tlsCertFile"), kc.TLSCertFile},
		{field.NewPath("tlsPrivateKeyFile"), kc.TLSPrivateKeyFile},
	} {
		if f.file != "" && !h.FileExists(f.file) {
			errs = append(errs, field.Invalid(f.p, f.file, "file does not exist"))
		}
	}
	if kc.ProtectKernelDefaults && h.Sysctl != nil {
		errs = append(errs, checkKernelDefaults(h.Sysctl)...)
	}
	if h.CgroupV1 && (kc.FailCgroupV1 == nil || *kc.FailCgroupV1) {
		errs = append(errs, field.Invalid(field.NewPath("failCgroupV1"), true,
			"kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release; set failCgroupV1: false to run on it"))
	}
	if kc.MemorySwap.SwapBehavior == "LimitedSwap" && !h.MemoryCgroupV2 {
		errs = append(errs, field.Invalid(field.NewPath("memorySwap", "swapBehavior"), kc.MemorySwap.SwapBehavior,
			"LimitedSwap needs the memory controller on cgroup v2 (memory.swap.max); this host's is on cgroup v1"))
	}
	return checkSwap(errs, kc.FailSwapOn == nil || *kc.FailSwapOn, h)
}

func checkSwap(errs field.ErrorList, failSwapOn bool, h Host) field.ErrorList {
	if h.ProcSwaps == nil {
		return errs
	}
	fp := field.NewPath("failSwapOn")
	swaps, err := h.ProcSwaps()
	switch {
	case err != nil:
		errs = append(errs, field.InternalError(fp, fmt.Errorf("failed to determine if swap is on: %w", err)))
	case !SwapOn(swaps):
	case failSwapOn:
		errs = append(errs, field.Invalid(fp, true, "running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"))
	case !h.SwapAccounting:
		errs = append(errs, field.Invalid(fp, false,
			"swap is on, but the memory cgroups do not account swap (no memory.swap.max, or memory.memsw.limit_in_bytes without swapaccount=1): containers' swap cannot be limited; disable swap or enable swap accounting"))
	}
	return errs
}

// KernelDefaults are the kernel tunables kubelet expects (its
// setupKernelTunables). With protectKernelDefaults kernelet, as kubelet,
// refuses to start when one differs; without it kubelet sets them, and
// kernelet leaves the host's kernel as it is (docs/configuration.md).
var KernelDefaults = []struct {
	Name  string
	Value int
}{
	{"vm/overcommit_memory", 1}, {"vm/panic_on_oom", 0}, {"kernel/panic", 10}, {"kernel/panic_on_oops", 1},
	{"kernel/keys/root_maxkeys", 1000000}, {"kernel/keys/root_maxbytes", 25000000},
}

func checkKernelDefaults(sysctl func(string) (int, error)) field.ErrorList {
	var errs field.ErrorList
	fp := field.NewPath("protectKernelDefaults")
	for _, d := range KernelDefaults {
		v, err := sysctl(d.Name)
		switch {
		case err != nil:
			errs = append(errs, field.InternalError(fp, err))
		case v != d.Value:
			errs = append(errs, field.Invalid(fp, true, fmt.Sprintf("invalid kernel flag: %s, expected value: %d, actual value: %d", d.Name, d.Value, v)))
		}
	}
	return errs
}
