package podconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func assertProto(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s =\n%s\nwant\n%s", what, prototext.Format(got), prototext.Format(want))
	}
}

// webPod is a Burstable pod with most of what the mapping reads.
func webPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "team", UID: "6f1c-uid",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"owner": "ops"},
		},
		Spec: v1.PodSpec{
			NodeName:                      "node-1",
			TerminationGracePeriodSeconds: ptr(int64(30)),
			DNSPolicy:                     v1.DNSClusterFirst,
			Subdomain:                     "web-svc",
			SecurityContext: &v1.PodSecurityContext{
				RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)),
				SupplementalGroups: []int64{4000}, FSGroup: ptr(int64(2000)),
				Sysctls: []v1.Sysctl{{Name: "net/ipv4/ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}},
			},
			Volumes: []v1.Volume{
				{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "host-etc", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc/ssl"}}},
			},
			InitContainers: []v1.Container{{
				Name: "proxy", Image: "proxy:1", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways),
				Ports:     []v1.ContainerPort{{ContainerPort: 15000, HostPort: 15000}},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: qty("32Mi")}},
			}},
			Containers: []v1.Container{{
				Name: "app", Image: "registry.kernelet.test/testbox:v1",
				Command:    []string{"/testbox"},
				Args:       []string{"serve", "--http", ":$(PORT)", "--name", "$$(POD)"},
				WorkingDir: "/srv",
				Env: []v1.EnvVar{
					{Name: "PORT", Value: "8080"},
					{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Ports: []v1.ContainerPort{
					{Name: "http", ContainerPort: 8080, HostPort: 18080},
					{Name: "metrics", ContainerPort: 9090},
					{Name: "dns", ContainerPort: 53, HostPort: 1053, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"},
				},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: qty("250m"), v1.ResourceMemory: qty("1Gi")},
					Limits:   v1.ResourceList{v1.ResourceCPU: qty("500m"), v1.ResourceMemory: qty("2Gi")},
				},
				VolumeMounts: []v1.VolumeMount{
					{Name: "cache", MountPath: "/cache"},
					{Name: "host-etc", MountPath: "/etc/ssl", ReadOnly: true, MountPropagation: ptr(v1.MountPropagationHostToContainer)},
				},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
				SecurityContext: &v1.SecurityContext{
					RunAsUser:                ptr(int64(1001)),
					AllowPrivilegeEscalation: ptr(false),
					ReadOnlyRootFilesystem:   ptr(true),
					Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_BIND_SERVICE"}, Drop: []v1.Capability{"ALL"}},
					SeccompProfile:           &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
				},
				Stdin: true, TTY: true,
			}},
		},
	}
}

func sandboxOpts() SandboxOptions {
	return SandboxOptions{
		Attempt: 2, PodLogsDir: "/var/log/pods",
		CgroupParent: "/kubepods/burstable/pod6f1c-uid",
		ClusterDNS:   []string{"10.96.0.10"}, ClusterDomain: "cluster.local",
		ResolvConf: fixtures + "resolv-two-search.conf",
	}
}

func TestSandboxConfigGolden(t *testing.T) {
	got, err := SandboxConfig(webPod(), sandboxOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "team", Uid: "6f1c-uid", Attempt: 2},
		Hostname:     "web",
		LogDirectory: "/var/log/pods/team_web_6f1c-uid",
		DnsConfig: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "second.example", "third.example"},
			Options:  []string{"ndots:5"},
		},
		PortMappings: []*runtimeapi.PortMapping{
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 15000, HostPort: 15000},
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080, HostPort: 18080},
			{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 1053, HostIp: "127.0.0.1"},
		},
		Labels:      map[string]string{"app": "web", LabelPodName: "web", LabelPodNamespace: "team", LabelPodUID: "6f1c-uid"},
		Annotations: map[string]string{"owner": "ops"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: "/kubepods/burstable/pod6f1c-uid",
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD,
				},
				RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
				RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
				SupplementalGroups: []int64{4000, 2000},
				Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			},
			Sysctls: map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"},
			// Requests 250m + sidecar 0 → shares 256; the sidecar has no
			// limits, so neither quota nor memory limit.
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000},
		},
	}
	assertProto(t, "sandbox config", got, want)
}

func TestSandboxHostname(t *testing.T) {
	long := strings.Repeat("a", 61) + "-.bcd" // 66 characters: cut to 63 = 61 a + "-.", trimmed to the a's
	cases := map[string]struct {
		mutate  func(p *v1.Pod)
		domain  string
		want    string
		wantErr string
	}{
		"pod name":              {func(p *v1.Pod) {}, "cluster.local", "web", ""},
		"host network has none": {func(p *v1.Pod) { p.Spec.HostNetwork, p.Spec.Hostname = true, "h1" }, "cluster.local", "", ""},
		"spec hostname":         {func(p *v1.Pod) { p.Spec.Hostname = "h1" }, "cluster.local", "h1", ""},
		"override wins":         {func(p *v1.Pod) { p.Spec.Hostname, p.Spec.HostnameOverride = "h1", ptr("custom.name") }, "", "custom.name", ""},
		"override with subdomain has no domain": {func(p *v1.Pod) {
			p.Spec.Subdomain, p.Spec.HostnameOverride = "sub", ptr("override-host")
		}, "cluster.local", "override-host", ""},
		"override cut and trimmed":        {func(p *v1.Pod) { p.Spec.HostnameOverride = ptr(strings.Repeat("a", 60) + ".b.cd") }, "", strings.Repeat("a", 60) + ".b", ""},
		"override not a subdomain":        {func(p *v1.Pod) { p.Spec.HostnameOverride = ptr("Not-RFC1123") }, "", "", `pod HostnameOverride "Not-RFC1123" is not a valid DNS subdomain`},
		"long pod name cut and trimmed":   {func(p *v1.Pod) { p.Name = long }, "", strings.Repeat("a", 61), ""},
		"invalid hostname":                {func(p *v1.Pod) { p.Spec.Hostname = "Bad_Name" }, "", "", `pod Hostname "Bad_Name" is not a valid DNS label`},
		"subdomain alone changes nothing": {func(p *v1.Pod) { p.Spec.Subdomain = "sub" }, "cluster.local", "web", ""},
		"fqdn":                            {func(p *v1.Pod) { p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "sub", ptr(true) }, "cluster.local", "web.sub.team.svc.cluster.local", ""},
		"fqdn without subdomain":          {func(p *v1.Pod) { p.Spec.SetHostnameAsFQDN = ptr(true) }, "cluster.local", "web", ""},
		"fqdn too long": {func(p *v1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = strings.Repeat("h", 40), "sub", ptr(true)
		}, "cluster.local", "", "FQDN " + strings.Repeat("h", 40) + ".sub.team.svc.cluster.local is too long (64 characters is the max, 67 characters requested)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "u"}}
			tc.mutate(pod)
			opts := SandboxOptions{CgroupParent: "/p", ClusterDomain: tc.domain, ClusterDNS: []string{"10.96.0.10"}}
			cfg, err := SandboxConfig(pod, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Hostname != tc.want {
				t.Errorf("hostname = %q, want %q", cfg.Hostname, tc.want)
			}
		})
	}
}

func TestSandboxConfigLinux(t *testing.T) {
	guaranteed := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: qty("500m"), v1.ResourceMemory: qty("256Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: qty("500m"), v1.ResourceMemory: qty("256Mi")},
	}
	cases := map[string]struct {
		mutate    func(p *v1.Pod)
		opts      func(o *SandboxOptions)
		ns        *runtimeapi.NamespaceOption
		resources *runtimeapi.LinuxContainerResources
		overhead  *runtimeapi.LinuxContainerResources
		seccomp   runtimeapi.SecurityProfile_ProfileType
		priv      bool
	}{
		"best effort": {
			ns:        &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
			seccomp:   runtimeapi.SecurityProfile_Unconfined,
		},
		"guaranteed with host namespaces": {
			mutate: func(p *v1.Pod) {
				p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
				p.Spec.Containers[0].Resources = guaranteed
			},
			ns:        &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE},
			resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 256 << 20},
			seccomp:   runtimeapi.SecurityProfile_Unconfined,
		},
		"shared pid namespace, 50ms period, overhead": {
			mutate: func(p *v1.Pod) {
				p.Spec.ShareProcessNamespace = ptr(true)
				p.Spec.Containers[0].Resources = guaranteed
				p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: qty("250m"), v1.ResourceMemory: qty("120Mi")}
			},
			opts:      func(o *SandboxOptions) { o.CPUCFSQuotaPeriod = 50 * time.Millisecond },
			ns:        &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD},
			resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 25000, CpuPeriod: 50000, MemoryLimitInBytes: 256 << 20},
			overhead:  &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 12500, CpuPeriod: 50000, MemoryLimitInBytes: 120 << 20},
			seccomp:   runtimeapi.SecurityProfile_Unconfined,
		},
		"no cfs quota": {
			mutate:    func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed },
			opts:      func(o *SandboxOptions) { o.DisableCPUCFSQuota = true },
			ns:        &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 256 << 20},
			seccomp:   runtimeapi.SecurityProfile_Unconfined,
		},
		"privileged container, seccomp default": {
			mutate:    func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)} },
			opts:      func(o *SandboxOptions) { o.SeccompDefault = true },
			ns:        &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
			seccomp:   runtimeapi.SecurityProfile_RuntimeDefault, priv: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
				Spec: v1.PodSpec{DNSPolicy: v1.DNSNone, Containers: []v1.Container{{Name: "c", Image: "i"}}}}
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			opts := SandboxOptions{CgroupParent: "/kubepods/pod-u"}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			cfg, err := SandboxConfig(pod, opts)
			if err != nil {
				t.Fatal(err)
			}
			l := cfg.GetLinux()
			assertProto(t, "namespaces", l.GetSecurityContext().GetNamespaceOptions(), tc.ns)
			assertProto(t, "resources", l.GetResources(), tc.resources)
			if tc.overhead != nil || l.GetOverhead() != nil {
				assertProto(t, "overhead", l.GetOverhead(), tc.overhead)
			}
			if got := l.GetSecurityContext().GetSeccomp().GetProfileType(); got != tc.seccomp {
				t.Errorf("seccomp = %v, want %v", got, tc.seccomp)
			}
			if got := l.GetSecurityContext().GetPrivileged(); got != tc.priv {
				t.Errorf("privileged = %v, want %v", got, tc.priv)
			}
		})
	}
}

func TestSandboxConfigNeedsAbsoluteCgroupParent(t *testing.T) {
	for _, parent := range []string{"", "kubepods/pod1"} {
		if _, err := SandboxConfig(webPod(), SandboxOptions{CgroupParent: parent}); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("parent %q: err = %v", parent, err)
		}
	}
}

func TestSysctlDotted(t *testing.T) {
	for in, want := range map[string]string{
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/conf/eth0.100/rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"net.ipv4.conf.eth0/100.rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"plain":                            "plain",
	} {
		if got := SysctlDotted(in); got != want {
			t.Errorf("SysctlDotted(%q) = %q, want %q", in, got, want)
		}
	}
}

func containerOpts() ContainerOptions {
	return ContainerOptions{
		RestartCount:               1,
		ImageRef:                   "sha256:0123abcd",
		NodeMemoryCapacity:         8 << 30,
		TerminationMessageHostPath: "/var/lib/kubelet/pods/6f1c-uid/containers/app/f00d",
		VolumeHostPaths: map[string]string{
			"cache":    "/var/lib/kubelet/pods/6f1c-uid/volumes/kubernetes.io~empty-dir/cache",
			"host-etc": "/etc/ssl",
		},
	}
}

func TestContainerConfigGolden(t *testing.T) {
	pod := webPod()
	c := &pod.Spec.Containers[0]
	got, err := ContainerConfig(pod, c, containerOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1},
		Image:      &runtimeapi.ImageSpec{Image: "sha256:0123abcd", UserSpecifiedImage: "registry.kernelet.test/testbox:v1"},
		Command:    []string{"/testbox"},
		Args:       []string{"serve", "--http", ":8080", "--name", "$(POD)"},
		WorkingDir: "/srv",
		Envs:       []*runtimeapi.KeyValue{{Key: "PORT", Value: []byte("8080")}, {Key: "POD", Value: []byte("web")}},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/cache", HostPath: "/var/lib/kubelet/pods/6f1c-uid/volumes/kubernetes.io~empty-dir/cache", Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
			{ContainerPath: "/etc/ssl", HostPath: "/etc/ssl", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
			{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/kubelet/pods/6f1c-uid/containers/app/f00d"},
		},
		Labels:      ContainerLabels(pod, c),
		Annotations: ContainerAnnotations(pod, c, 1),
		LogPath:     "app/1.log",
		Stdin:       true,
		Tty:         true,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{
				CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 2 << 30,
				OomScoreAdj: 875, // Burstable: 1000 − 1000·1Gi/8Gi
			},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Capabilities:       &runtimeapi.Capability{AddCapabilities: []string{"NET_BIND_SERVICE"}, DropCapabilities: []string{"ALL"}},
				NamespaceOptions:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
				RunAsUser:          &runtimeapi.Int64Value{Value: 1001},
				RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
				ReadonlyRootfs:     true,
				SupplementalGroups: []int64{4000, 2000},
				NoNewPrivs:         true,
				Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
				// kubelet's defaults: a runtime given none masks nothing.
				MaskedPaths:   []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"},
				ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
			},
		},
	}
	assertProto(t, "container config", got, want)
	if got.Annotations[AnnotationRestartCount] != "1" || got.Labels[LabelContainerName] != "app" {
		t.Errorf("labels %v annotations %v", got.Labels, got.Annotations)
	}
}

func TestContainerResources(t *testing.T) {
	const capacity = int64(8) << 30
	rr := func(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
		l := func(cpu, mem string) v1.ResourceList {
			out := v1.ResourceList{}
			if cpu != "" {
				out[v1.ResourceCPU] = qty(cpu)
			}
			if mem != "" {
				out[v1.ResourceMemory] = qty(mem)
			}
			return out
		}
		return v1.ResourceRequirements{Requests: l(reqCPU, reqMem), Limits: l(limCPU, limMem)}
	}
	cases := map[string]struct {
		res      v1.ResourceRequirements
		other    *v1.ResourceRequirements // a second container
		critical bool
		opts     func(o *ContainerOptions)
		want     *runtimeapi.LinuxContainerResources
	}{
		"best effort": {res: rr("", "", "", ""),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000}},
		"guaranteed": {res: rr("1", "512Mi", "1", "512Mi"),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuQuota: 100000, CpuPeriod: 100000, MemoryLimitInBytes: 512 << 20, OomScoreAdj: -997}},
		"guaranteed by limits only": {res: rr("", "", "100m", "64Mi"),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuQuota: 10000, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20, OomScoreAdj: -997}},
		"burstable 2Gi of 8Gi": {res: rr("100m", "2Gi", "", ""),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, OomScoreAdj: 750}},
		"burstable without memory request": {res: rr("100m", "", "", ""),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, OomScoreAdj: 999}},
		"burstable in a pod with a guaranteed container": {res: rr("", "", "", ""), other: ptr(rr("1", "1Gi", "1", "1Gi")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 999}},
		"tiny cpu limit gets the minimum quota": {res: rr("1m", "", "1m", ""),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuQuota: 1000, CpuPeriod: 100000, OomScoreAdj: 999}},
		"node critical burstable": {res: rr("100m", "", "", ""), critical: true,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, OomScoreAdj: -997}},
		"custom period": {res: rr("", "", "250m", "64Mi"), opts: func(o *ContainerOptions) { o.CPUCFSQuotaPeriod = 20 * time.Millisecond },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 5000, CpuPeriod: 20000, MemoryLimitInBytes: 64 << 20, OomScoreAdj: -997}},
		"quota disabled": {res: rr("", "", "250m", ""), opts: func(o *ContainerOptions) { o.DisableCPUCFSQuota = true },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 256, OomScoreAdj: 999}},
		"cgroup v2 oom group": {res: rr("", "", "", ""), opts: func(o *ContainerOptions) { o.CgroupV2 = true },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000,
				Unified: map[string]string{"memory.oom.group": "1", "memory.high": "max"}}},
		"cgroup v2 single process oom kill": {res: rr("", "", "", ""), opts: func(o *ContainerOptions) { o.CgroupV2, o.SingleProcessOOMKill = true, true },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000, Unified: map[string]string{"memory.high": "max"}}},
		"cgroup v2 memory QoS beside the oom group": {res: rr("100m", "128Mi", "", "256Mi"), opts: func(o *ContainerOptions) {
			o.CgroupV2 = true
			o.MemoryQoS = MemoryQoSOptions{Enforce: true, ThrottlingFactor: 0.9, AllocatableMemory: 32 << 30, PageSize: 4096}
		},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: 985,
				Unified: map[string]string{"memory.oom.group": "1", "memory.min": "0", "memory.low": "0", "memory.high": "255012864"}}},
		"cgroup v1: no memory QoS even when asked": {res: rr("100m", "128Mi", "", "256Mi"), opts: func(o *ContainerOptions) {
			o.MemoryQoS = MemoryQoSOptions{ThrottlingFactor: 0.9, AllocatableMemory: 32 << 30, PageSize: 4096}
		},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: 985}},
		"unknown capacity": {res: rr("100m", "2Gi", "", ""), opts: func(o *ContainerOptions) { o.NodeMemoryCapacity = 0 },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, OomScoreAdj: 999}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i", Resources: tc.res}}}}
			if tc.other != nil {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "other", Image: "i", Resources: *tc.other})
			}
			if tc.critical {
				pod.Spec.PriorityClassName = "system-node-critical"
				pod.Spec.Priority = ptr(int32(2000001000))
			}
			opts := ContainerOptions{NodeMemoryCapacity: capacity}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], opts)
			if err != nil {
				t.Fatal(err)
			}
			assertProto(t, "resources", cfg.GetLinux().GetResources(), tc.want)
		})
	}
}

func TestContainerSecurityContext(t *testing.T) {
	cases := map[string]struct {
		pod     *v1.PodSecurityContext
		c       *v1.SecurityContext
		opts    func(o *ContainerOptions)
		check   func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext)
		wantErr string
	}{
		"nothing set": {check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser != nil || sc.Privileged || sc.NoNewPrivs || sc.ReadonlyRootfs || sc.Capabilities != nil || sc.Apparmor != nil {
				t.Errorf("sc = %v", sc)
			}
			if sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_Unconfined {
				t.Errorf("seccomp = %v, want Unconfined", sc.Seccomp)
			}
		}},
		"seccomp default on": {opts: func(o *ContainerOptions) { o.SeccompDefault = true },
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
					t.Errorf("seccomp = %v", sc.Seccomp)
				}
			}},
		"container overrides pod": {
			pod: &v1.PodSecurityContext{RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(2)), SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
				AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			c: &v1.SecurityContext{RunAsUser: ptr(int64(5)), SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
				AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("k8s-web")}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.RunAsUser.GetValue() != 5 || sc.RunAsGroup.GetValue() != 2 || sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_Unconfined ||
					sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_Localhost || sc.Apparmor.GetLocalhostRef() != "k8s-web" {
					t.Errorf("sc = %v", sc)
				}
			}},
		"privileged is unconfined": {c: &v1.SecurityContext{Privileged: ptr(true), SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if !sc.Privileged || sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_Unconfined {
					t.Errorf("sc = %v", sc)
				}
			}},
		"allowPrivilegeEscalation true keeps privileges": {c: &v1.SecurityContext{AllowPrivilegeEscalation: ptr(true)},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.NoNewPrivs {
					t.Error("no_new_privs set")
				}
			}},
		"localhost seccomp": {c: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/audit.json")}},
			opts: func(o *ContainerOptions) { o.SeccompProfileRoot = "/var/lib/kubelet/seccomp" },
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_Localhost || sc.Seccomp.GetLocalhostRef() != "/var/lib/kubelet/seccomp/profiles/audit.json" {
					t.Errorf("seccomp = %v", sc.Seccomp)
				}
			}},
		"localhost seccomp without a root": {c: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")}},
			wantErr: "seccomp profile root"},
		"runAsNonRoot with uid 0": {pod: &v1.PodSecurityContext{RunAsNonRoot: ptr(true)}, c: &v1.SecurityContext{RunAsUser: ptr(int64(0))},
			wantErr: `container's runAsUser breaks non-root policy (pod: "p_ns(u)", container: c)`},
		"runAsNonRoot with a root image": {c: &v1.SecurityContext{RunAsNonRoot: ptr(true)},
			wantErr: `container has runAsNonRoot and image will run as root (pod: "p_ns(u)", container: c)`},
		"runAsNonRoot with image uid 0": {c: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, opts: func(o *ContainerOptions) { o.ImageUID = ptr(int64(0)) },
			wantErr: "image will run as root"},
		"runAsNonRoot with a named image user": {c: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, opts: func(o *ContainerOptions) { o.ImageUsername = "nobody" },
			wantErr: `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "p_ns(u)", container: c)`},
		"runAsNonRoot with image uid 65534": {c: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, opts: func(o *ContainerOptions) { o.ImageUID = ptr(int64(65534)) },
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {}},
		"runAsNonRoot false lets root run": {pod: &v1.PodSecurityContext{RunAsNonRoot: ptr(true)}, c: &v1.SecurityContext{RunAsNonRoot: ptr(false)},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
				Spec: v1.PodSpec{SecurityContext: tc.pod, Containers: []v1.Container{{Name: "c", Image: "i", SecurityContext: tc.c}}}}
			var opts ContainerOptions
			if tc.opts != nil {
				tc.opts(&opts)
			}
			cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg.GetLinux().GetSecurityContext())
		})
	}
}

func TestContainerMountsAndErrors(t *testing.T) {
	vols := []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}},
	}
	cases := map[string]struct {
		c       v1.Container
		opts    ContainerOptions
		want    []*runtimeapi.Mount
		wantErr []string
		unsup   bool
	}{
		"no mounts without a termination file": {c: v1.Container{Name: "c", Image: "i"}},
		"default termination message path": {c: v1.Container{Name: "c", Image: "i"}, opts: ContainerOptions{TerminationMessageHostPath: "/pods/u/containers/c/abc"},
			want: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: "/pods/u/containers/c/abc"}}},
		"custom termination message path": {c: v1.Container{Name: "c", Image: "i", TerminationMessagePath: "/tmp/done"}, opts: ContainerOptions{TerminationMessageHostPath: "/h"},
			want: []*runtimeapi.Mount{{ContainerPath: "/tmp/done", HostPath: "/h"}}},
		"bidirectional emptyDir": {c: v1.Container{Name: "c", Image: "i", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s", MountPropagation: ptr(v1.MountPropagationBidirectional)}}},
			opts: ContainerOptions{VolumeHostPaths: map[string]string{"scratch": "/pods/u/volumes/scratch"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/s", HostPath: "/pods/u/volumes/scratch", Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}}},
		"unresolved host path": {c: v1.Container{Name: "c", Image: "i", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}}},
			wantErr: []string{`volume "scratch": no host path prepared for it`}},
		"unsupported volume kind, subPath and missing volume, all reported": {
			c: v1.Container{Name: "c", Image: "i", VolumeMounts: []v1.VolumeMount{
				{Name: "cfg", MountPath: "/cfg"}, {Name: "scratch", MountPath: "/s", SubPath: "x"}, {Name: "ghost", MountPath: "/g"}}},
			wantErr: []string{`volume "cfg": unsupported pod fields: nfs volumes are not supported yet`,
				`volume mount "scratch": unsupported pod fields: subPath and subPathExpr need a volume manager`,
				`volume mount "ghost": the pod has no such volume`},
			unsup: true},
		"subPathExpr expanded against the env": {c: v1.Container{Name: "c", Image: "i",
			Env:          []v1.EnvVar{{Name: "POD", Value: "p1"}},
			VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s", SubPathExpr: "logs/$(POD)"}}},
			opts: ContainerOptions{VolumeHostPaths: map[string]string{"scratch": "/v"},
				SubPath: func(r SubPathRequest) (string, error) { return r.VolumeHostPath + "/resolved/" + r.SubPath, nil }},
			want: []*runtimeapi.Mount{{ContainerPath: "/s", HostPath: "/v/resolved/logs/p1"}}},
		"no image": {c: v1.Container{Name: "c"}, wantErr: []string{`container "c" of pod p_ns(u): no image`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
				Spec: v1.PodSpec{Volumes: vols, Containers: []v1.Container{tc.c}}}
			cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], tc.opts)
			if len(tc.wantErr) > 0 {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want it to contain %q", err, w)
					}
				}
				if got := errors.Is(err, ErrUnsupported); got != tc.unsup {
					t.Errorf("errors.Is(ErrUnsupported) = %v, want %v", got, tc.unsup)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Mounts) != len(tc.want) {
				t.Fatalf("mounts = %v, want %v", cfg.Mounts, tc.want)
			}
			for i := range tc.want {
				assertProto(t, "mount", cfg.Mounts[i], tc.want[i])
			}
		})
	}
}

func TestContainerCommandExpansion(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &v1.Container{Name: "c", Image: "i",
		Command: []string{"/bin/sh", "-c", "echo $(GREETING) $$(HOME) $(UNDEFINED) $(LATE)"},
		Args:    []string{"$(GREETING)", ""},
		Env:     []v1.EnvVar{{Name: "GREETING", Value: "hi"}, {Name: "LATE", Value: "$(GREETING)!"}}}
	cfg, err := ContainerConfig(pod, c, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// LATE was expanded when defined; command and args see final values.
	if got := strings.Join(cfg.Command, "|"); got != "/bin/sh|-c|echo hi $(HOME) $(UNDEFINED) hi!" {
		t.Errorf("command = %q", cfg.Command)
	}
	if got := strings.Join(cfg.Args, "|"); got != "hi|" {
		t.Errorf("args = %q", cfg.Args)
	}
	c.Command, c.Args = nil, nil
	cfg, _ = ContainerConfig(pod, c, ContainerOptions{RestartCount: 4})
	if cfg.Command != nil || cfg.Args != nil {
		t.Errorf("no command/args must stay nil (image entrypoint): %q %q", cfg.Command, cfg.Args)
	}
	if cfg.Image.Image != "i" || cfg.LogPath != "c/4.log" || cfg.Metadata.Attempt != 4 {
		t.Errorf("image %v log %q attempt %d", cfg.Image, cfg.LogPath, cfg.Metadata.Attempt)
	}
}

func TestLogPaths(t *testing.T) {
	if got := PodLogDir("", "ns", "web", "u1"); got != "/var/log/pods/ns_web_u1" {
		t.Errorf("PodLogDir default = %q", got)
	}
	if got := PodLogDir("/logs", "ns", "web", "u1"); got != "/logs/ns_web_u1" {
		t.Errorf("PodLogDir = %q", got)
	}
	if got := ContainerLogPath("app", 0); got != "app/0.log" {
		t.Errorf("ContainerLogPath = %q", got)
	}
}

func TestSELinuxOptionsPassedOn(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1,c2"}},
			Containers: []v1.Container{{Name: "a"}, {Name: "b", SecurityContext: &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Type: "spc_t"}}}}}}
	psc := pod.Spec.SecurityContext
	if got := seLinuxOptions(psc.SELinuxOptions); got.GetLevel() != "s0:c1,c2" {
		t.Errorf("pod options %+v", got)
	}
	if seLinuxOptions(nil) != nil {
		t.Error("nil options are not nil")
	}
	if err := ValidatePodForRuntime(pod); err != nil {
		t.Errorf("seLinuxOptions rejected: %v", err)
	}
}

func TestExtraSupplementalGroups(t *testing.T) {
	pod := webPod()
	opts := containerOpts()
	opts.ExtraSupplementalGroups = []int64{2000, 5, 4000, 6}
	got, err := ContainerConfig(pod, &pod.Spec.Containers[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Linux.SecurityContext.SupplementalGroups; !slices.Equal(g, []int64{4000, 2000, 5, 6}) {
		t.Errorf("supplemental groups %v, want the pod's, its fsGroup, then the volumes' new ones", g)
	}
}
