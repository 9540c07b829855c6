package cgroups

import (
	"reflect"
	"strings"
	"testing"
)

const testUID = "6f1c2a3b-0d4e-4f50-8a61-7b8c9d0e1f23"

func TestLayoutNames(t *testing.T) {
	esc := strings.ReplaceAll(testUID, "-", "_")
	for name, tc := range map[string]struct {
		driver                                 Driver
		root                                   string
		wantRoot, kubepods, burstable, bestEff string
		guaranteedPod, burstablePod, container string
	}{
		"cgroupfs /": {DriverCgroupfs, "/", "/", "/kubepods", "/kubepods/burstable", "/kubepods/besteffort",
			"/kubepods/pod" + testUID, "/kubepods/burstable/pod" + testUID, "/kubepods/burstable/pod" + testUID + "/abc123"},
		"zero driver is cgroupfs": {"", "", "/", "/kubepods", "/kubepods/burstable", "/kubepods/besteffort",
			"/kubepods/pod" + testUID, "/kubepods/burstable/pod" + testUID, "/kubepods/burstable/pod" + testUID + "/abc123"},
		"cgroupfs under a root": {DriverCgroupfs, "/node/a", "/node/a", "/node/a/kubepods", "/node/a/kubepods/burstable",
			"/node/a/kubepods/besteffort", "/node/a/kubepods/pod" + testUID, "/node/a/kubepods/burstable/pod" + testUID,
			"/node/a/kubepods/burstable/pod" + testUID + "/abc123"},
		"systemd /": {DriverSystemd, "/", "/", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice",
			"/kubepods.slice/kubepods-besteffort.slice",
			"/kubepods.slice/kubepods-pod" + esc + ".slice",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + esc + ".slice",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + esc + ".slice/cri-containerd-abc123.scope"},
		"systemd under a root with a dash": {DriverSystemd, "/my-node", "/my_node.slice", "/my_node.slice/my_node-kubepods.slice",
			"/my_node.slice/my_node-kubepods.slice/my_node-kubepods-burstable.slice",
			"/my_node.slice/my_node-kubepods.slice/my_node-kubepods-besteffort.slice",
			"/my_node.slice/my_node-kubepods.slice/my_node-kubepods-pod" + esc + ".slice",
			"/my_node.slice/my_node-kubepods.slice/my_node-kubepods-burstable.slice/my_node-kubepods-burstable-pod" + esc + ".slice",
			"/my_node.slice/my_node-kubepods.slice/my_node-kubepods-burstable.slice/my_node-kubepods-burstable-pod" + esc + ".slice/cri-containerd-abc123.scope"},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := NewLayout(tc.driver, tc.root)
			if err != nil {
				t.Fatal(err)
			}
			pod := l.Pod(Burstable, testUID)
			got := []string{l.Root(), l.Kubepods(), l.QoS(Burstable), l.QoS(BestEffort), l.Pod(Guaranteed, testUID), pod,
				l.Container(pod, "abc123")}
			want := []string{tc.wantRoot, tc.kubepods, tc.burstable, tc.bestEff, tc.guaranteedPod, tc.burstablePod, tc.container}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("names:\n got %q\nwant %q", got, want)
			}
			// And back: the pod and the container from the paths.
			ref, ok := ParsePodCgroup(l.Container(pod, "abc123"))
			if !ok || ref.PodUID != testUID || ref.PodCgroup != pod || ref.ContainerID != "abc123" {
				t.Fatalf("ParsePodCgroup(container) = %+v, %v", ref, ok)
			}
			for _, class := range []QOSClass{Guaranteed, Burstable, BestEffort} {
				ref, ok := ParsePodCgroup(l.Pod(class, testUID))
				if !ok || ref.PodUID != testUID || ref.PodCgroup != l.Pod(class, testUID) || ref.Below != "" || ref.ContainerID != "" {
					t.Fatalf("ParsePodCgroup(%v pod) = %+v, %v", class, ref, ok)
				}
			}
			for _, cg := range []string{l.Root(), l.Kubepods(), l.QoS(Burstable), l.QoS(BestEffort)} {
				if ref, ok := ParsePodCgroup(cg); ok {
					t.Errorf("ParsePodCgroup(%s) = %+v: not a pod's", cg, ref)
				}
			}
		})
	}
}

func TestParsePodCgroup(t *testing.T) {
	for name, tc := range map[string]struct {
		cg   string
		ok   bool
		want PodCgroupRef
	}{
		"cgroupfs container": {"/kubepods/besteffort/pod1-2/ctr", true,
			PodCgroupRef{PodUID: "1-2", PodCgroup: "/kubepods/besteffort/pod1-2", Below: "ctr", ContainerID: "ctr"}},
		"cgroupfs below the container": {"/kubepods/pod1-2/ctr/sub", true,
			PodCgroupRef{PodUID: "1-2", PodCgroup: "/kubepods/pod1-2", Below: "ctr", ContainerID: "ctr"}},
		"systemd crio scope": {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice/crio-ab12.scope", true,
			PodCgroupRef{PodUID: "1-2", PodCgroup: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice",
				Below: "crio-ab12.scope", ContainerID: "ab12"}},
		"relative path":          {"kubepods/pod9", true, PodCgroupRef{PodUID: "9", PodCgroup: "/kubepods/pod9"}},
		"a podman scope":         {"/machine.slice/podman-12.scope", false, PodCgroupRef{}},
		"a pod prefix only":      {"/kubepods/pod", false, PodCgroupRef{}},
		"a slice without pod":    {"/system.slice/kubepods-x.slice", false, PodCgroupRef{}},
		"the root":               {"/", false, PodCgroupRef{}},
		"a service":              {"/system.slice/containerd.service", false, PodCgroupRef{}},
		"an empty pod slice uid": {"/kubepods.slice/kubepods-pod.slice", false, PodCgroupRef{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := ParsePodCgroup(tc.cg)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParsePodCgroup(%q) = %+v, %v; want %+v, %v", tc.cg, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestNewLayoutRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		driver Driver
		root   string
		want   string
	}{
		"unknown driver":           {"openrc", "/", `cgroup driver "openrc"`},
		"relative root":            {DriverCgroupfs, "kube", "want an absolute, clean path"},
		"underscore under systemd": {DriverSystemd, "/a_b", "may not contain"},
		"slice name as root":       {DriverSystemd, "/kube.slice", "may not contain"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewLayout(tc.driver, tc.root); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLayout(%q, %q) = %v, want an error with %q", tc.driver, tc.root, err, tc.want)
			}
		})
	}
	// cgroupfs takes any component.
	if _, err := NewLayout(DriverCgroupfs, "/a_b.c"); err != nil {
		t.Fatal(err)
	}
}

func TestSliceUnit(t *testing.T) {
	for cg, want := range map[string][2]string{
		"/kubepods.slice": {"kubepods.slice", "-.slice"},
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice": {"kubepods-burstable-pod1.slice", "kubepods-burstable.slice"},
	} {
		unit, parent, ok := SliceUnit(cg)
		if !ok || unit != want[0] || parent != want[1] {
			t.Errorf("SliceUnit(%s) = %q, %q, %v; want %q", cg, unit, parent, ok, want)
		}
	}
	for _, cg := range []string{"/", "/kubepods", "/x.slice/a.scope", "/.slice"} {
		if _, _, ok := SliceUnit(cg); ok {
			t.Errorf("SliceUnit(%s): not a slice", cg)
		}
	}
}

func TestSliceProperties(t *testing.T) {
	s := CgroupSettings{CPUShares: 1024, CPUQuota: 150000, CPUPeriod: 100000, MemoryLimit: 96 << 20, PidsLimit: NoLimit,
		MemoryMin: 32 << 20, MemoryLow: 0, MemoryHigh: 80 << 20}
	props := func(ps []UnitProperty) map[string]any {
		m := map[string]any{}
		for _, p := range ps {
			if _, dup := m[p.Name]; dup {
				t.Fatalf("property %s twice", p.Name)
			}
			m[p.Name] = p.Value
		}
		return m
	}
	v2 := props(SliceProperties(s, SliceControllers{CPUv2: true, MemoryV2: true, Pids: true, IO: true}, true))
	want := map[string]any{"CPUAccounting": true, "MemoryAccounting": true, "TasksAccounting": true, "IOAccounting": true,
		"CPUWeight": uint64(39), "CPUQuotaPerSecUSec": uint64(1500000), "CPUQuotaPeriodUSec": uint64(100000),
		"MemoryMax": uint64(96 << 20), "MemoryMin": uint64(32 << 20), "MemoryLow": uint64(0), "MemoryHigh": uint64(80 << 20),
		"TasksMax": SystemdInfinity}
	if !reflect.DeepEqual(v2, want) {
		t.Errorf("cgroup v2:\n got %v\nwant %v", v2, want)
	}
	// Without Memory QoS the kernel defaults; without limits infinity.
	s2 := CgroupSettings{CPUShares: 2, CPUQuota: NoLimit, CPUPeriod: 100000, MemoryLimit: NoLimit, PidsLimit: 4096,
		MemoryMin: 5, MemoryHigh: 7}
	got := props(SliceProperties(s2, SliceControllers{CPUv2: true, MemoryV2: true, Pids: true}, false))
	for k, v := range map[string]any{"CPUWeight": uint64(1), "CPUQuotaPerSecUSec": SystemdInfinity, "MemoryMax": SystemdInfinity,
		"MemoryMin": uint64(0), "MemoryLow": uint64(0), "MemoryHigh": SystemdInfinity, "TasksMax": uint64(4096)} {
		if got[k] != v {
			t.Errorf("v2 without limits: %s = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got["IOAccounting"]; ok {
		t.Error("IOAccounting without io on v2")
	}
	// Hybrid: cpu and memory on v1, no pids controller.
	v1 := props(SliceProperties(s, SliceControllers{}, true))
	want1 := map[string]any{"CPUAccounting": true, "MemoryAccounting": true, "CPUShares": uint64(1024),
		"CPUQuotaPerSecUSec": uint64(1500000), "CPUQuotaPeriodUSec": uint64(100000), "MemoryLimit": uint64(96 << 20)}
	if !reflect.DeepEqual(v1, want1) {
		t.Errorf("cgroup v1:\n got %v\nwant %v", v1, want1)
	}
}

func TestCPUQuotaPerSecUSec(t *testing.T) {
	for _, tc := range []struct {
		quota  int64
		period uint64
		want   uint64
	}{
		{50000, 100000, 500000},  // 500m
		{1000, 100000, 10000},    // the minimum quota: 1 %
		{1500, 100000, 20000},    // 15m → 1.5 % rounded up to 2 %
		{100000, 50000, 2000000}, // 2 CPUs on a 50 ms period
		{33333, 100000, 340000},  // 333.33 ms/s → 34 %
		{NoLimit, 100000, SystemdInfinity},
	} {
		if got := CPUQuotaPerSecUSec(tc.quota, tc.period); got != tc.want {
			t.Errorf("CPUQuotaPerSecUSec(%d, %d) = %d, want %d", tc.quota, tc.period, got, tc.want)
		}
	}
}
