package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API group, version and kind of kernelet's own configuration
// document: the settings kubelet has no field for. It is the second YAML
// document of the configuration file (kubelet reads only the first, so
// the file stays loadable by kubelet) or a file of its own
// (--kernelet-config).
const (
	KerneletAPIVersion = "kernelet.io/v1alpha1"
	KerneletKind       = "KerneletConfiguration"
)

// KerneletConfiguration is kernelet's own configuration document.
type KerneletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// EvictionMode is "kernelet" (default: decide on kernel notifications
	// and every evictionTick, evict as many pods as the deficit needs) or
	// "kubelet" (kubelet's behaviour, for comparison: one pod per decision
	// every 10 s, no kernel wake-ups).
	EvictionMode string `json:"evictionMode,omitempty"`
	// EvictionDryRun: decide, but only log, export
	// (kernelet_eviction_dry_run_pods) and show in `kernelet status` the
	// pods that would be evicted; never kill.
	EvictionDryRun bool `json:"evictionDryRun,omitempty"`
	// EvictionTick is the fallback decision period between kernel
	// notifications. Default 1s (10s in kubelet mode).
	EvictionTick metav1.Duration `json:"evictionTick,omitempty"`
	// EvictionCooldown bounds how long evicted pods count as freeing
	// their memory (until their cgroup is gone). Default 30s. For a disk
	// signal the bound is at least 30s (until their containers and disk
	// emptyDirs are gone and the space is free).
	EvictionCooldown metav1.Duration `json:"evictionCooldown,omitempty"`

	// EvictionHard, EvictionSoft, EvictionSoftGracePeriod and
	// EvictionMinimumReclaim are the PSI thresholds, as kubelet's maps but
	// keyed by PSI signal (memory.pressure.some.avg10,
	// memory.pressure.full.avg10, io.pressure.full.avg10,
	// cpu.pressure.some.avg10 for the node; the same with the "kubepods."
	// prefix for the pods' cgroup), valued in percent of stalled time
	// ("20%"); met when the stall is above the value.
	EvictionHard            map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft            map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMinimumReclaim  map[string]string `json:"evictionMinimumReclaim,omitempty"`

	// PSINodeCondition adds the node condition kernelet.io/PSIPressure
	// (reasons KerneletHasPSIPressure / KerneletHasNoPSIPressure), True
	// while a PSI threshold is met; admission then treats it as
	// MemoryPressure. Off by default.
	PSINodeCondition bool `json:"psiNodeCondition,omitempty"`
	// PSIContentionThresholds turns on KEP-5394's PSI node conditions
	// (SystemMemoryContentionPressure, SystemDiskContentionPressure,
	// KubepodsMemoryContentionPressure, KubepodsDiskContentionPressure),
	// each with its threshold in percent of stalled time ("10%") against
	// the "full" line of its PSI file: True once avg60 and avg10 reach it,
	// False once avg60 is below. Conditions not named are not reported
	// (kubelet v1.37.2 reports none). Empty by default.
	PSIContentionThresholds map[string]string `json:"psiContentionThresholds,omitempty"`

	// MemoryPageCache is how the memory signals (memory.available,
	// allocatableMemory.available) count active page cache: "kubelet"
	// (default: working set = usage − inactive_file, kubelet's formula)
	// or "refaults": active file pages count only while they refault
	// (workingset_activate_file on v2, workingset_refault_file on v1, at
	// 256 pages/s or more over 10 s) with memory PSI confirming (some
	// avg10 ≥ 1 %); otherwise they are treated as inactive. A pod whose
	// "working set" is a file it re-reads is then not evicted; the
	// trade-off: the signal crosses later by the active cache the kernel
	// must reclaim first, and a workload that needs its cache only shows
	// it once it refaults.
	MemoryPageCache string `json:"memoryPageCache,omitempty"`

	// MemoryThrottle throttles Burstable and BestEffort pods (their pod
	// cgroup's memory.high) before evicting for a hard memory threshold;
	// cgroup v2 only, off by default (eviction/throttle).
	MemoryThrottle MemoryThrottle `json:"memoryThrottle,omitempty"`

	// PLEGMode is "evented" (default: when the runtime streams container
	// events, containerd 2, each event updates the pod cache and wakes the
	// pod's worker at once, and the relist runs every minute as the
	// safety net, every second while the stream is broken) or "relist"
	// (kubelet's default: relist every second; an event only wakes it
	// early).
	PLEGMode string `json:"plegMode,omitempty"`
}

// PLEG modes (PLEGMode).
const (
	PLEGEvented = "evented"
	PLEGRelist  = "relist"
)

// KerneletOverride changes a decoded KerneletConfiguration before
// defaults and validation: command-line flags, which win over the file.
type KerneletOverride func(*KerneletConfiguration)

// MemoryThrottle is the KerneletConfiguration's memoryThrottle.
type MemoryThrottle struct {
	// Enabled turns throttling on (cgroup v2 only; refused on v1).
	Enabled bool `json:"enabled,omitempty"`
	// Deadline is how long a hard memory threshold may stay met while
	// pods are throttled before eviction goes on (default 30s).
	Deadline metav1.Duration `json:"deadline,omitempty"`
	// MaxStall is the share of time a throttled pod may stall on memory
	// (its memory.pressure "some", over at least 5 s) before its
	// memory.high is restored, as a percentage (default "25%").
	MaxStall string `json:"maxStall,omitempty"`
}
