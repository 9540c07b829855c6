package cgroups_test

import (
	"context"
	"fmt"
	"log"

	"github.com/kernelet/kernelet/cgroups"
)

// A Reader over the host's cgroups: the node's memory.available and the
// statistics of a pod cgroup, also by the id an eBPF program reports.
func ExampleReader() {
	ctx := context.Background()
	h, err := cgroups.Discover()
	if err != nil {
		log.Fatal(err)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		log.Fatal(err)
	}

	var node cgroups.NodeStats
	if err := r.Node(ctx, &node); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("memory.available %v of %v bytes (working set %v from %v)\n",
		node.Memory.AvailableBytes, node.Memory.CapacityBytes, node.Memory.WorkingSetBytes, node.Memory.Source)
	fmt.Printf("pid.available %v, memory PSI some avg10 %.2f%%\n", node.PIDs.AvailablePIDs, node.Pressure.Memory.Some.Avg10)

	// Reuse one CgroupStats per cgroup across reads: no allocation.
	var pod cgroups.CgroupStats
	if err := r.Cgroup(ctx, "/kubepods/burstable/pod7c5b9d2e", cgroups.StatAll, &pod); err != nil {
		log.Fatal(err)
	}
	if ws, ok := pod.Memory.WorkingSetBytes.Get(); ok {
		fmt.Printf("working set %d bytes, limit %v, OOM kills %v\n", ws, pod.Memory.LimitBytes, pod.Memory.Events.OOMKill)
	}

	// The memcg id an OOM tracepoint reports, back to the cgroup.
	id, err := r.ID(cgroups.MemcgID, pod.Cgroup)
	if err != nil {
		log.Fatal(err)
	}
	if err := r.CgroupByID(ctx, cgroups.MemcgID, id, cgroups.StatMemory, &pod); err != nil {
		log.Fatal(err)
	}
	fmt.Println(pod.Cgroup)

	fs, err := cgroups.Filesystem(ctx, "/var/lib/kubelet")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("nodefs.available %d bytes, nodefs.inodesFree %v\n", fs.AvailableBytes, fs.InodesFree)
}

// Reading a pod cgroup of a cgroup v2 host (here the fixture tree of this
// package, captured on kernel 6.1): a value the host cannot know, such as
// the v1-only failcnt, is unknown rather than zero.
func ExampleReader_Cgroup() {
	h := &cgroups.Hierarchies{
		Mode:    cgroups.Unified,
		Unified: &cgroups.Mount{Path: "testdata/v2/sys/fs/cgroup", Root: "/", Version: 2},
	}
	r, err := cgroups.NewReader(h, cgroups.WithProcRoot("testdata/v2/proc"))
	if err != nil {
		log.Fatal(err)
	}
	var s cgroups.CgroupStats
	if err := r.Cgroup(context.Background(), "/kubepods/besteffort/oomed", cgroups.StatAll, &s); err != nil {
		log.Fatal(err)
	}
	m := s.Memory
	fmt.Println("usage", m.UsageBytes, "working set", m.WorkingSetBytes, "limit", m.LimitBytes, "peak", m.PeakBytes)
	fmt.Println("events: max", m.Events.Max, "oom", m.Events.OOM, "oom_kill", m.Events.OOMKill)
	fmt.Println("failcnt", m.Failcnt)
	fmt.Printf("memory PSI some avg10 %.2f%% total %v\n", s.Pressure.Memory.Some.Avg10, s.Pressure.Memory.Some.Total)
	fmt.Println("cpu throttled", s.CPU.ThrottledPeriods, "of", s.CPU.Periods, "periods")
	// Output:
	// usage 4308992 working set 4308992 limit 67108864 peak 67108864
	// events: max 19 oom 1 oom_kill 1
	// failcnt unknown
	// memory PSI some avg10 57.20% total 11.594342s
	// cpu throttled 123 of 262 periods
}

// The node's memory.available and pid.available, computed as kubelet does.
func ExampleReader_Node() {
	h := &cgroups.Hierarchies{
		Mode:    cgroups.Unified,
		Unified: &cgroups.Mount{Path: "testdata/v2/sys/fs/cgroup", Root: "/", Version: 2},
	}
	r, err := cgroups.NewReader(h, cgroups.WithProcRoot("testdata/v2/proc"))
	if err != nil {
		log.Fatal(err)
	}
	var n cgroups.NodeStats
	if err := r.Node(context.Background(), &n); err != nil {
		log.Fatal(err)
	}
	m := n.Memory
	fmt.Println("capacity", m.CapacityBytes, "- working set", m.WorkingSetBytes, "=", m.AvailableBytes)
	fmt.Println("min(pid_max, threads-max)", min(n.PIDs.PidMax.V, n.PIDs.ThreadsMax.V), "- running", n.PIDs.Running, "=", n.PIDs.AvailablePIDs)
	// Output:
	// capacity 491696128 - working set 11329536 = 480366592
	// min(pid_max, threads-max) 3612 - running 59 = 3553
}
