package cgroups_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/kernelet/kernelet/cgroups"
)

// The settings of a Burstable pod with pod-level resources — a 500m cpu
// request, a 1 CPU limit, 128Mi requested and 256Mi as limit — under
// memoryReservationPolicy TieredReservation and memoryThrottlingFactor 0.9,
// and how they read on cgroup v2.
func ExampleComputePodSettings() {
	cfg := cgroups.QoSConfig{
		Allocatable:            cgroups.NodeAllocatable{MilliCPU: 4000, MemoryBytes: 8 << 30},
		EnforceAllocatable:     true,
		CPUCFSQuotaPeriod:      100 * time.Millisecond,
		PodPidsLimit:           1024,
		MemoryThrottlingFactor: 0.9,
		TieredReservation:      true,
		PageSize:               4096,
	}
	pod := cgroups.PodResources{
		UID: "6a4f2e3b", QOS: cgroups.Burstable,
		CPURequestMilli: 500, CPULimitMilli: 1000, AllCPULimits: true,
		MemoryRequestBytes: 128 << 20, MemoryLimitBytes: 256 << 20, AllMemoryLimits: true,
		PodLevelResources: true,
	}
	s := cgroups.ComputePodSettings(cfg, pod)
	fmt.Println(cgroups.PodCgroup("/", pod.QOS, pod.UID))
	fmt.Println("v1: cpu.shares", s.CPUShares, "cpu.cfs_quota_us", s.CPUQuota, "cpu.cfs_period_us", s.CPUPeriod)
	fmt.Println("v2: cpu.weight", cgroups.CPUWeight(s.CPUShares), "cpu.max", cgroups.CPUMax(s.CPUQuota, s.CPUPeriod))
	fmt.Println("memory.max", cgroups.V2Limit(s.MemoryLimit), "memory.min", s.MemoryMin, "memory.low", s.MemoryLow, "memory.high", cgroups.V2Limit(s.MemoryHigh))
	fmt.Println("pids.max", cgroups.V2Limit(s.PidsLimit))
	// Output:
	// /kubepods/burstable/pod6a4f2e3b
	// v1: cpu.shares 512 cpu.cfs_quota_us 100000 cpu.cfs_period_us 100000
	// v2: cpu.weight 20 cpu.max 100000 100000
	// memory.max 268435456 memory.min 0 memory.low 134217728 memory.high 255012864
	// pids.max 1024
}

// Writing the QoS hierarchy and a pod cgroup into every hierarchy of the
// host, and removing the pod once its containers are gone.
func ExampleManager() {
	ctx := context.Background()
	h, err := cgroups.Discover()
	if err != nil {
		log.Fatal(err)
	}
	m, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: "/", MemoryQoS: true})
	if err != nil {
		log.Fatal(err)
	}
	if ok, why := m.MemoryQoS(); !ok {
		log.Printf("no Memory QoS: %v", why)
	}
	cfg := cgroups.QoSConfig{
		Allocatable:            cgroups.NodeAllocatable{MilliCPU: 4000, MemoryBytes: 8 << 30},
		EnforceAllocatable:     true,
		CPUCFSQuotaPeriod:      100 * time.Millisecond,
		MemoryThrottlingFactor: 0.9,
		PageSize:               int64(os.Getpagesize()),
	}
	pod := cgroups.PodResources{UID: "6a4f2e3b", QOS: cgroups.BestEffort}
	if _, err := m.EnsureQoS(ctx, cfg, []cgroups.PodResources{pod}); err != nil {
		log.Fatal(err)
	}
	cg, _, err := m.EnsurePod(ctx, cfg, pod)
	if err != nil {
		log.Fatal(err)
	}
	// ... the runtime runs the pod's containers under cg ...
	if err := m.Remove(ctx, cg); err != nil {
		log.Print(err) // errors.Is(err, cgroups.ErrCgroupBusy) while processes remain
	}
}
