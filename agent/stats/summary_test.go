package stats

import (
	"context"
	"encoding/json"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestSummary(t *testing.T) {
	c, _ := fixtureCollector(t)
	s, err := c.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(Summary(s, false))
	if err != nil {
		t.Fatal(err)
	}
	var sum statsapi.Summary // what a client decodes
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	n := sum.Node
	if n.NodeName != "node-a" || n.CPU == nil || n.CPU.UsageCoreNanoSeconds == nil || n.CPU.PSI == nil ||
		n.Memory == nil || n.Memory.AvailableBytes == nil || n.Memory.PSI == nil || n.Fs == nil || n.Runtime == nil ||
		n.Runtime.ImageFs == nil || n.Rlimit == nil || n.IO == nil || n.IO.PSI == nil {
		t.Fatalf("node stats incomplete: %s", b)
	}
	if len(n.SystemContainers) != 1 || n.SystemContainers[0].Name != statsapi.SystemContainerPods {
		t.Errorf("system containers = %+v", n.SystemContainers)
	}
	if len(sum.Pods) != 1 {
		t.Fatalf("pods = %d", len(sum.Pods))
	}
	p := sum.Pods[0]
	if p.PodRef != (statsapi.PodReference{Name: "web", Namespace: "ns", UID: "7c5b9d2e"}) {
		t.Errorf("podRef = %+v", p.PodRef)
	}
	if p.Memory == nil || *p.Memory.WorkingSetBytes != 31965184 || *p.Memory.AvailableBytes != 67108864-31965184 {
		t.Errorf("pod memory = %+v", p.Memory)
	}
	if p.CPU == nil || p.CPU.PSI == nil || p.CPU.PSI.Some.Total != 2571826 || p.CPU.PSI.Full.Avg10 != 13.94 {
		t.Errorf("pod cpu = %+v", p.CPU)
	}
	if p.Memory.PSI == nil || p.IO == nil || p.IO.PSI == nil || p.ProcessStats == nil || *p.ProcessStats.ProcessCount != 5 {
		t.Errorf("pod memory/io PSI or processes missing: %s", b)
	}
	if len(p.Containers) != 1 || p.Containers[0].Name != "app" || *p.Containers[0].Memory.WorkingSetBytes != 20971520 ||
		p.Containers[0].Memory.PSI == nil {
		t.Errorf("containers = %+v (only running ones)", p.Containers)
	}

	only := Summary(s, true)
	if only.Node.Fs != nil || only.Node.IO != nil || only.Pods[0].IO != nil || only.Pods[0].Containers[0].IO != nil ||
		only.Pods[0].Memory == nil || only.Pods[0].CPU == nil {
		t.Errorf("only_cpu_and_memory kept more than CPU and memory: %+v", only.Pods[0])
	}
}

// A pod's measured local storage is its ephemeral storage (writable layers,
// logs, volumes: kubelet's total), its volume stats and its containers'
// rootfs and logs; unmeasured, they are left out.
func TestSummaryStorage(t *testing.T) {
	c, _ := fixtureCollector(t)
	s, err := c.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := Summary(s, false).Pods[0]; p.EphemeralStorage != nil || p.VolumeStats != nil || p.Containers[0].Rootfs != nil {
		t.Fatalf("storage reported without a measurement: %+v", p)
	}
	s.Pods[0].Storage = &PodStorage{Total: FsUsage{Bytes: 15 << 20, Inodes: 16},
		Volumes: map[string]FsUsage{"data": {Bytes: 4 << 20, Inodes: 3}, "cache": {Bytes: 1 << 20, Inodes: 1}},
		Containers: map[string]ContainerStorage{"app": {Rootfs: &FsUsage{Bytes: 8 << 20, Inodes: 10},
			Logs: &FsUsage{Bytes: 2 << 20, Inodes: 2}}},
	}
	p := Summary(s, false).Pods[0]
	if p.EphemeralStorage == nil || *p.EphemeralStorage.UsedBytes != 15<<20 || *p.EphemeralStorage.InodesUsed != 16 ||
		p.EphemeralStorage.CapacityBytes == nil {
		t.Errorf("ephemeral storage = %+v, want 15 MiB, 16 inodes, the node filesystem's capacity", p.EphemeralStorage)
	}
	if len(p.VolumeStats) != 2 || p.VolumeStats[0].Name != "cache" || *p.VolumeStats[1].UsedBytes != 4<<20 {
		t.Errorf("volume stats = %+v", p.VolumeStats)
	}
	if c := p.Containers[0]; c.Rootfs == nil || *c.Rootfs.UsedBytes != 8<<20 || c.Logs == nil || *c.Logs.UsedBytes != 2<<20 {
		t.Errorf("container rootfs/logs = %+v / %+v", c.Rootfs, c.Logs)
	}
	if only := Summary(s, true).Pods[0]; only.EphemeralStorage != nil || only.VolumeStats != nil || only.Containers[0].Rootfs != nil {
		t.Errorf("only_cpu_and_memory kept the storage")
	}

	// A PVC volume, as its CSI driver reports it: after the local ones, with its pvcRef.
	s.Pods[0].Claims = []ClaimUsage{{Name: "db", Claim: "db-claim", Time: s.Time, CapacityBytes: 1 << 30, AvailableBytes: 1<<30 - 5<<20,
		UsedBytes: 5 << 20, Inodes: 1000, InodesFree: 990, InodesUsed: 10}, {Name: "inline", Time: s.Time, UsedBytes: 7}}
	p = Summary(s, false).Pods[0]
	if len(p.VolumeStats) != 4 {
		t.Fatalf("volume stats = %+v", p.VolumeStats)
	}
	v := p.VolumeStats[2]
	if v.Name != "db" || v.PVCRef == nil || v.PVCRef.Name != "db-claim" || v.PVCRef.Namespace != p.PodRef.Namespace ||
		*v.UsedBytes != 5<<20 || *v.CapacityBytes != 1<<30 || *v.InodesUsed != 10 || *v.InodesFree != 990 {
		t.Errorf("PVC volume stats = %+v (pvcRef %+v)", v, v.PVCRef)
	}
	if v := p.VolumeStats[3]; v.Name != "inline" || v.PVCRef != nil || *v.UsedBytes != 7 {
		t.Errorf("CSI inline volume stats = %+v (pvcRef %+v)", v, v.PVCRef)
	}
}

// The node's availableBytes leaves out the huge pages of the sweep
// (HugepageAwareEviction), in the Summary and its CPU-and-memory variant,
// floored at 0; none left out, it is MemTotal − working set.
func TestSummaryHugePages(t *testing.T) {
	c, _ := fixtureCollector(t)
	s, err := c.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := s.Node.Memory
	plain := int64(m.CapacityBytes.V) - int64(m.WorkingSetBytes.V)
	if !m.CapacityBytes.Known || !m.WorkingSetBytes.Known || plain <= 8<<20 {
		t.Fatalf("fixture node memory %+v: want more than 8 MiB available", m)
	}
	for _, tc := range []struct{ huge, want int64 }{{0, plain}, {8 << 20, plain - 8<<20}, {plain + 1, 0}} {
		hs := *s
		hs.HugePages = tc.huge
		for _, only := range []bool{false, true} {
			if got := Summary(&hs, only).Node.Memory.AvailableBytes; got == nil || int64(*got) != tc.want {
				t.Errorf("huge pages %d, only_cpu_and_memory %v: availableBytes %v, want %d", tc.huge, only, got, tc.want)
			}
		}
	}
}
