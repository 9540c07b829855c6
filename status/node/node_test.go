package node

import (
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func TestKubeletVersion(t *testing.T) {
	for name, tc := range map[string]struct {
		kube, kernelet, want string
		wantErr              bool
	}{
		"release":        {kube: "v1.37.2", kernelet: "v0.3.0", want: "v1.37.2+kernelet.v0.3.0"},
		"dev":            {kube: "v1.37.2", kernelet: "v0.0.0-dev", want: "v1.37.2+kernelet.v0.0.0-dev"},
		"git describe":   {kube: "v1.37.2", kernelet: "v0.3.0-12-gabc123_dirty", want: "v1.37.2+kernelet.v0.3.0-12-gabc123-dirty"},
		"slashes, empty": {kube: "v1.37.2", kernelet: "feature/x..y+z", want: "v1.37.2+kernelet.feature-x.y-z"},
		"no version":     {kube: "v1.37.2", kernelet: "", want: "v1.37.2+kernelet"},
		"bad kube":       {kube: "1.37", kernelet: "v1", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := KubeletVersion(tc.kube, tc.kernelet)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got != tc.want {
				t.Errorf("KubeletVersion = %q, want %q", got, tc.want)
			}
			v, err := utilversion.ParseSemantic(got)
			if err != nil {
				t.Fatalf("%q does not parse as semver: %v", got, err)
			}
			if !v.AtLeast(utilversion.MustParseSemantic("v1.23.0")) || v.Minor() != 37 {
				t.Errorf("%q compares as %v", got, v)
			}
		})
	}
}

func TestContainerRuntimeVersion(t *testing.T) {
	for name, tc := range map[string]struct{ name, version, want string }{
		"containerd v prefix": {"containerd", "v1.7.2", "containerd://1.7.2"},
		"plain":               {"containerd", "1.6.20", "containerd://1.6.20"},
		"cri-o":               {"cri-o", "1.30.1", "cri-o://1.30.1"},
		"prerelease":          {"containerd", "v2.0.0-rc.1", "containerd://2.0.0-rc.1"},
		"not semver":          {"fake", "0.1", "fake://0.1"},
		"garbage":             {"fake", "latest", "fake://latest"},
		"unknown":             {"", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ContainerRuntimeVersion(tc.name, tc.version); got != tc.want {
				t.Errorf("ContainerRuntimeVersion(%q, %q) = %q, want %q", tc.name, tc.version, got, tc.want)
			}
		})
	}
}

func TestImages(t *testing.T) {
	var many []Image
	for i := range 60 {
		many = append(many, Image{RepoTags: []string{fmt.Sprintf("img:%d", i)}, SizeBytes: uint64(i + 1)})
	}
	for name, tc := range map[string]struct {
		imgs      []Image
		max       int
		wantNames [][]string
		wantSizes []int64
		wantLen   int
	}{
		"largest first, digests then tags": {max: 50, imgs: []Image{
			{RepoTags: []string{"small:1"}, SizeBytes: 10},
			{RepoTags: []string{"big:1", "big:latest"}, RepoDigests: []string{"big@sha256:aa"}, SizeBytes: 300},
			{SizeBytes: 1000}, // no name: listed without
			{RepoDigests: []string{"mid@sha256:bb"}, SizeBytes: 200},
		},
			wantNames: [][]string{nil, {"big@sha256:aa", "big:1", "big:latest"}, {"mid@sha256:bb"}, {"small:1"}},
			wantSizes: []int64{1000, 300, 200, 10}},
		"five names at most": {max: 50, imgs: []Image{{RepoTags: []string{"a:1", "a:2", "a:3", "a:4"},
			RepoDigests: []string{"a@sha256:1", "a@sha256:2"}, SizeBytes: 1}},
			wantNames: [][]string{{"a@sha256:1", "a@sha256:2", "a:1", "a:2", "a:3"}}},
		"capped at 50": {max: 50, imgs: many, wantLen: 50, wantSizes: []int64{60, 59}},
		"no cap":       {max: -1, imgs: many, wantLen: 60},
		"none":         {max: 0, imgs: many, wantLen: 0},
	} {
		t.Run(name, func(t *testing.T) {
			got := Images(tc.imgs, tc.max)
			if tc.wantNames != nil {
				tc.wantLen = len(tc.wantNames)
			}
			if len(got) != tc.wantLen {
				t.Fatalf("%d images, want %d", len(got), tc.wantLen)
			}
			for i, w := range tc.wantNames {
				if !slices.Equal(got[i].Names, w) {
					t.Errorf("image %d names = %v, want %v", i, got[i].Names, w)
				}
			}
			for i, w := range tc.wantSizes {
				if got[i].SizeBytes != w {
					t.Errorf("image %d size = %d, want %d", i, got[i].SizeBytes, w)
				}
			}
		})
	}
}

func testConfig() *Config {
	kc := &kubeletv1beta1.KubeletConfiguration{
		MaxPods: 110, Port: 10250, RegisterNode: ptr.To(true), NodeStatusMaxImages: ptr.To[int32](50),
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
		NodeStatusReportFrequency: metav1.Duration{Duration: 5 * time.Minute},
		NodeLeaseDurationSeconds:  40,
		KubeReserved:              map[string]string{"memory": "256Mi", "cpu": "100m"},
		RegisterWithTaints:        []v1.Taint{{Key: "kernelet.dev/new", Effect: v1.TaintEffectNoSchedule}},
	}
	return &Config{
		NodeName: "node-a", Hostname: "host-a", Kubelet: kc, Thresholds: defaultHard(),
		NodeLabels: map[string]string{"role": "worker", v1.LabelHostname: "ignored"},
		Machine: Machine{MachineID: "m1", SystemUUID: "u1", BootID: "b1", KernelVersion: "6.8.0",
			OSImage: "Ubuntu 24.04 LTS", OperatingSystem: "linux", Architecture: "amd64", CPUs: 2,
			MemoryBytes: 4 << 30, EphemeralStorageBytes: 50 << 30, HugePages: map[int64]int64{2 << 20: 0}},
		KubeletVersion: "v1.37.2+kernelet.v0.1.0",
	}
}

func readyInputs() Inputs {
	return Inputs{Runtime: readyRuntime(t0), NodeIPs: []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("fd00::5")},
		Images: []Image{{RepoTags: []string{"pause:3.10"}, SizeBytes: 300000}}}
}

func TestNodeInfoSwap(t *testing.T) {
	for name, tc := range map[string]struct {
		swap int64
		want *v1.NodeSwapStatus
	}{
		"no swap":  {},
		"1Gi swap": {swap: 1 << 30, want: &v1.NodeSwapStatus{Capacity: ptr.To[int64](1 << 30)}},
	} {
		t.Run(name, func(t *testing.T) {
			got := NodeInfo(Machine{SwapBytes: tc.swap}, RuntimeState{}, "v1.37.2").Swap
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("swap = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewNode(t *testing.T) {
	cfg := testConfig()
	n, events := NewNode(cfg, readyInputs(), t0)
	wantLabels := map[string]string{"role": "worker", "kubernetes.io/hostname": "host-a",
		"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
	if fmt.Sprint(n.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels = %v, want %v", n.Labels, wantLabels)
	}
	if n.Name != "node-a" || n.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
		t.Errorf("meta = %+v", n.ObjectMeta)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "kernelet.dev/new" || n.Spec.PodCIDR != "" || n.Spec.ProviderID != "" {
		t.Errorf("spec = %+v", n.Spec)
	}
	cfg.Kubelet.ProviderID = "kind://docker/c/node-a"
	if n, _ := NewNode(cfg, readyInputs(), t0); n.Spec.ProviderID != "kind://docker/c/node-a" {
		t.Errorf("providerID = %q, want the configured one", n.Spec.ProviderID)
	}
	wantAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"},
		{Type: v1.NodeHostName, Address: "host-a"}}
	if !slices.Equal(n.Status.Addresses, wantAddrs) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, wantAddrs)
	}
	wantInfo := v1.NodeSystemInfo{MachineID: "m1", SystemUUID: "u1", BootID: "b1", KernelVersion: "6.8.0",
		OSImage: "Ubuntu 24.04 LTS", ContainerRuntimeVersion: "containerd://1.7.2", KubeletVersion: "v1.37.2+kernelet.v0.1.0",
		OperatingSystem: "linux", Architecture: "amd64"}
	if !equality.Semantic.DeepEqual(n.Status.NodeInfo, wantInfo) {
		t.Errorf("nodeInfo = %+v\nwant %+v", n.Status.NodeInfo, wantInfo)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemonEndpoints = %+v", n.Status.DaemonEndpoints)
	}
	mem := n.Status.Allocatable[v1.ResourceMemory]
	if mem.Value() != 4<<30-256<<20-100<<20 {
		t.Errorf("allocatable memory = %d", mem.Value())
	}
	if len(n.Status.Images) != 1 || len(n.Status.Conditions) != 4 {
		t.Errorf("images %v, conditions %v", n.Status.Images, n.Status.Conditions)
	}
	if len(events) != 4 || events[3] != EventNodeReady {
		t.Errorf("events = %v", events)
	}
}

func TestReconcile(t *testing.T) {
	cfg := testConfig()
	for name, tc := range map[string]struct {
		existing    metav1.ObjectMeta
		wantChanged bool
		wantLabels  map[string]string
	}{
		"already right": {existing: v1ObjectMeta(map[string]string{"kubernetes.io/hostname": "host-a",
			"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
			"beta.kubernetes.io/arch": "amd64", "team": "x"}, true)},
		"labels fixed, others kept, node labels not added": {wantChanged: true,
			existing: v1ObjectMeta(map[string]string{"kubernetes.io/hostname": "old", "team": "x"}, true),
			wantLabels: map[string]string{"kubernetes.io/hostname": "host-a", "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "team": "x"}},
		"annotation added": {wantChanged: true, existing: v1ObjectMeta(map[string]string{"kubernetes.io/hostname": "host-a",
			"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
			"beta.kubernetes.io/arch": "amd64"}, false)},
	} {
		t.Run(name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: tc.existing, Spec: v1.NodeSpec{PodCIDR: "10.244.1.0/24",
				Taints: []v1.Taint{{Key: "admin", Effect: v1.TaintEffectNoExecute}}}}
			if got := Reconcile(n, cfg); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if tc.wantLabels != nil && fmt.Sprint(n.Labels) != fmt.Sprint(tc.wantLabels) {
				t.Errorf("labels = %v, want %v", n.Labels, tc.wantLabels)
			}
			if n.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
				t.Errorf("annotations = %v", n.Annotations)
			}
			if n.Spec.PodCIDR != "10.244.1.0/24" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "admin" {
				t.Errorf("spec changed: %+v", n.Spec)
			}
		})
	}
}

func v1ObjectMeta(labels map[string]string, cmad bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: "node-a", Labels: labels}
	if cmad {
		m.Annotations = map[string]string{AnnotationControllerManagedAttachDetach: "true"}
	}
	return m
}

func TestSetStatusRuntimeHandlersAndFeatures(t *testing.T) {
	cfg := testConfig()
	in := readyInputs()
	n, _ := NewNode(cfg, in, t0)
	if n.Status.RuntimeHandlers != nil || n.Status.Features != nil {
		t.Errorf("handlers %v features %v without the runtime saying", n.Status.RuntimeHandlers, n.Status.Features)
	}
	in.Runtime.Handlers = []RuntimeHandler{{Name: "", RecursiveReadOnlyMounts: true, UserNamespaces: true}, {Name: "runc", RecursiveReadOnlyMounts: true}}
	in.Runtime.SupplementalGroupsPolicy = ptr.To(true)
	SetStatus(n, cfg, in, t0)
	b, _ := json.Marshal(struct {
		H any `json:"runtimeHandlers"`
		F any `json:"features"`
	}{n.Status.RuntimeHandlers, n.Status.Features})
	want := `{"runtimeHandlers":[{"name":"","features":{"recursiveReadOnlyMounts":true,"userNamespaces":true}},` +
		`{"name":"runc","features":{"recursiveReadOnlyMounts":true,"userNamespaces":false}}],"features":{"supplementalGroupsPolicy":true}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestSetStatusDeclaredFeatures(t *testing.T) {
	cfg := testConfig()
	n, _ := NewNode(cfg, readyInputs(), t0)
	if n.Status.DeclaredFeatures != nil {
		t.Errorf("declaredFeatures %q without any configured", n.Status.DeclaredFeatures)
	}
	cfg.DeclaredFeatures = []string{"ExtendWebSocketsToKubelet", "RestartAllContainersOnContainerExits"}
	SetStatus(n, cfg, readyInputs(), t0)
	if !reflect.DeepEqual(n.Status.DeclaredFeatures, cfg.DeclaredFeatures) {
		t.Errorf("declaredFeatures = %q, want %q", n.Status.DeclaredFeatures, cfg.DeclaredFeatures)
	}
	n.Status.DeclaredFeatures[0] = "changed"
	if cfg.DeclaredFeatures[0] != "ExtendWebSocketsToKubelet" {
		t.Error("the status shares the configured slice")
	}
}

func TestSetStatusKeepsExtendedResources(t *testing.T) {
	cfg := testConfig()
	n, _ := NewNode(cfg, readyInputs(), t0)
	n.Status.Capacity["example.com/dongle"] = resource.MustParse("4")
	n.Status.Allocatable["example.com/dongle"] = resource.MustParse("3")
	n.Status.Capacity["hugepages-1Gi"] = resource.MustParse("2Gi") // size gone from the machine
	SetStatus(n, cfg, readyInputs(), t0.Add(time.Minute))
	if q := n.Status.Allocatable["example.com/dongle"]; q.Value() != 3 {
		t.Errorf("extended resource allocatable = %v", q.String())
	}
	if _, ok := n.Status.Capacity["hugepages-1Gi"]; ok {
		t.Errorf("stale huge page size kept: %v", n.Status.Capacity)
	}
	if _, ok := n.Status.Capacity["hugepages-2Mi"]; !ok {
		t.Errorf("huge page size missing: %v", n.Status.Capacity)
	}
}

func TestStatusChangedAndShouldPatch(t *testing.T) {
	cfg := testConfig()
	base, _ := NewNode(cfg, readyInputs(), t0)
	later := t0.Add(10 * time.Second)
	for name, tc := range map[string]struct {
		in          Inputs
		lastReport  time.Time
		now         time.Time
		wantChanged bool
		wantPatch   bool
	}{
		"same status, heartbeat only": {in: readyInputs(), lastReport: t0, now: later},
		"report frequency passed":     {in: readyInputs(), lastReport: t0, now: t0.Add(5 * time.Minute), wantPatch: true},
		"never reported":              {in: readyInputs(), now: later, wantPatch: true},
		"new image": {in: func() Inputs {
			in := readyInputs()
			in.Images = append(in.Images, Image{RepoTags: []string{"busybox:1"}, SizeBytes: 5})
			return in
		}(), lastReport: t0, now: later, wantChanged: true, wantPatch: true},
		"memory pressure": {in: func() Inputs { in := readyInputs(); in.MemoryPressure = true; return in }(),
			lastReport: t0, now: later, wantChanged: true, wantPatch: true},
		"address changed": {in: func() Inputs { in := readyInputs(); in.NodeIPs = in.NodeIPs[:1]; return in }(),
			lastReport: t0, now: later, wantChanged: true, wantPatch: true},
	} {
		t.Run(name, func(t *testing.T) {
			n := base.DeepCopy()
			tc.in.Runtime.LastSync = tc.now // the runtime answers
			SetStatus(n, cfg, tc.in, tc.now)
			changed := StatusChanged(&base.Status, &n.Status)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if got := ShouldPatch(changed, tc.lastReport, tc.now, 5*time.Minute); got != tc.wantPatch {
				t.Errorf("ShouldPatch = %v, want %v", got, tc.wantPatch)
			}
		})
	}
}

// applyStatusPatch applies a status patch to old as the API server does.
func applyStatusPatch(t *testing.T, old *v1.Node, patch []byte) *v1.Node {
	t.Helper()
	oldJSON, _ := json.Marshal(old)
	out, err := strategicpatch.StrategicMergePatch(oldJSON, patch, v1.Node{})
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	var n v1.Node
	if err := json.Unmarshal(out, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestStatusPatch(t *testing.T) {
	cfg := testConfig()
	old, _ := NewNode(cfg, readyInputs(), t0)
	old.Spec.PodCIDR = "10.244.0.0/24"
	for name, in := range map[string]Inputs{
		"addresses swapped": func() Inputs {
			in := readyInputs()
			in.NodeIPs = []net.IP{net.ParseIP("10.0.0.6"), net.ParseIP("10.0.0.7")}
			return in
		}(),
		"condition and image": func() Inputs {
			in := readyInputs()
			in.DiskPressure = true
			in.Images = nil
			return in
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			updated := old.DeepCopy()
			SetStatus(updated, cfg, in, t0.Add(time.Minute))
			updated.Spec.PodCIDR = "must-not-be-patched"
			patch, err := StatusPatch(old, updated)
			if err != nil {
				t.Fatal(err)
			}
			got := applyStatusPatch(t, old, patch)
			if got.Spec.PodCIDR != "10.244.0.0/24" {
				t.Errorf("patch touched the spec: %s", patch)
			}
			if StatusChanged(&got.Status, &updated.Status) {
				t.Errorf("patched status differs from the computed one\npatch %s\ngot  %+v\nwant %+v", patch, got.Status, updated.Status)
			}
			if !slices.Equal(got.Status.Addresses, updated.Status.Addresses) {
				t.Errorf("addresses = %v, want %v", got.Status.Addresses, updated.Status.Addresses)
			}
		})
	}
}

func TestMetadataPatch(t *testing.T) {
	cfg := testConfig()
	old := &v1.Node{ObjectMeta: v1ObjectMeta(map[string]string{"kubernetes.io/hostname": "old", "team": "x"}, false)}
	updated := old.DeepCopy()
	Reconcile(updated, cfg)
	patch, err := MetadataPatch(old, updated)
	if err != nil || patch == nil {
		t.Fatalf("patch %s, %v", patch, err)
	}
	got := applyStatusPatch(t, old, patch)
	if fmt.Sprint(got.Labels) != fmt.Sprint(updated.Labels) || fmt.Sprint(got.Annotations) != fmt.Sprint(updated.Annotations) {
		t.Errorf("patched meta = %v %v, want %v %v", got.Labels, got.Annotations, updated.Labels, updated.Annotations)
	}
	if p, err := MetadataPatch(updated, updated); err != nil || p != nil {
		t.Errorf("no-change patch = %s, %v", p, err)
	}
}

func TestSetDevicePlugins(t *testing.T) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	tests := map[string]struct {
		capacity, allocatable       v1.ResourceList
		devCap, devAlloc            map[string]int64
		wantCapacity, wantAllocated v1.ResourceList
	}{
		"new resource": {
			capacity: v1.ResourceList{"cpu": q("2")}, allocatable: v1.ResourceList{"cpu": q("2")},
			devCap: map[string]int64{"example.com/resource": 2}, devAlloc: map[string]int64{"example.com/resource": 1},
			wantCapacity:  v1.ResourceList{"cpu": q("2"), "example.com/resource": q("2")},
			wantAllocated: v1.ResourceList{"cpu": q("2"), "example.com/resource": q("1")},
		},
		"plugin gone: zero": {
			capacity: v1.ResourceList{"example.com/resource": q("2")}, allocatable: v1.ResourceList{"example.com/resource": q("2")},
			devCap: map[string]int64{"example.com/resource": 0}, devAlloc: map[string]int64{"example.com/resource": 0},
			wantCapacity:  v1.ResourceList{"example.com/resource": q("0")},
			wantAllocated: v1.ResourceList{"example.com/resource": q("0")},
		},
		"extended resource gone from capacity leaves allocatable": {
			capacity: v1.ResourceList{"cpu": q("2")}, allocatable: v1.ResourceList{"cpu": q("2"), "example.com/old": q("1")},
			wantCapacity:  v1.ResourceList{"cpu": q("2")},
			wantAllocated: v1.ResourceList{"cpu": q("2")},
		},
		"admin's resource kept": {
			capacity: v1.ResourceList{"example.com/dongle": q("4")}, allocatable: v1.ResourceList{"example.com/dongle": q("3")},
			wantCapacity:  v1.ResourceList{"example.com/dongle": q("4")},
			wantAllocated: v1.ResourceList{"example.com/dongle": q("3")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := &v1.NodeStatus{Capacity: tc.capacity, Allocatable: tc.allocatable}
			SetDevicePlugins(st, tc.devCap, tc.devAlloc)
			if !equality.Semantic.DeepEqual(st.Capacity, tc.wantCapacity) {
				t.Errorf("capacity = %v, want %v", st.Capacity, tc.wantCapacity)
			}
			if !equality.Semantic.DeepEqual(st.Allocatable, tc.wantAllocated) {
				t.Errorf("allocatable = %v, want %v", st.Allocatable, tc.wantAllocated)
			}
		})
	}
}

// TestSetStatusVolumesInUse: volumesInUse is the volume manager's list;
// volumesAttached (the attach/detach controller's) is left as it is, and
// the status patch carries the change.
func TestSetStatusVolumesInUse(t *testing.T) {
	cfg := testConfig()
	old, _ := NewNode(cfg, readyInputs(), t0)
	attached := []v1.AttachedVolume{{Name: "kubernetes.io/csi/d^h1", DevicePath: ""}}
	old.Status.VolumesAttached = attached
	in := readyInputs()
	in.VolumesInUse = []v1.UniqueVolumeName{"kubernetes.io/csi/d^h1", "kubernetes.io/csi/d^h2"}
	updated := old.DeepCopy()
	SetStatus(updated, cfg, in, t0.Add(time.Minute))
	if !slices.Equal(updated.Status.VolumesInUse, in.VolumesInUse) || !reflect.DeepEqual(updated.Status.VolumesAttached, attached) {
		t.Fatalf("volumesInUse %v volumesAttached %v", updated.Status.VolumesInUse, updated.Status.VolumesAttached)
	}
	if !StatusChanged(&old.Status, &updated.Status) {
		t.Error("a volumesInUse change is not a status change")
	}
	patch, err := StatusPatch(old, updated)
	if err != nil {
		t.Fatal(err)
	}
	if got := applyStatusPatch(t, old, patch); !slices.Equal(got.Status.VolumesInUse, in.VolumesInUse) || len(got.Status.VolumesAttached) != 1 {
		t.Errorf("patched: volumesInUse %v volumesAttached %v (patch %s)", got.Status.VolumesInUse, got.Status.VolumesAttached, patch)
	}
	in.VolumesInUse = nil
	SetStatus(updated, cfg, in, t0.Add(2*time.Minute))
	if updated.Status.VolumesInUse != nil {
		t.Errorf("volumesInUse %v after the volumes went", updated.Status.VolumesInUse)
	}
}
