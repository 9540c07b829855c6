package podconfig

import (
	"errors"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The pod-to-CRI mapping (podconfig*.go) turns a v1.Pod into the
// PodSandboxConfig and ContainerConfigs the runtime is given. It is pure:
// everything that depends on the node or on side effects (the pod's cgroup,
// resolved volume paths, the termination-message file, pod IPs) comes in
// through the options, computed by the caller. The only file it reads is
// the host resolver configuration named in SandboxOptions.

// Defaults of the options, kubelet's.
const (
	DefaultPodLogsDir        = "/var/log/pods"
	DefaultCPUCFSQuotaPeriod = 100 * time.Millisecond
	DefaultResolvConf        = "/etc/resolv.conf"
)

// Limits kubelet applies to a pod's resolver configuration (the API
// server's validation limits).
const (
	MaxDNSNameservers     = 3
	MaxDNSSearchPaths     = 32
	MaxDNSSearchListChars = 2048
	// maxDNSSearchLength drops longer search domains (glibc aborts on them).
	maxDNSSearchLength = 253
	// maxResolvConfBytes bounds how much of the resolver file is read.
	maxResolvConfBytes = 10 << 20
)

// Event reasons of the warnings SandboxConfig reports (kubelet's).
const (
	ReasonDNSConfigForming  = "DNSConfigForming"
	ReasonMissingClusterDNS = "MissingClusterDNS"
)

// CPUOptions are the KubeletConfiguration fields that shape cpu limits.
type CPUOptions struct {
	// DisableCPUCFSQuota is cpuCFSQuota: false (no quota nor period is
	// passed). The zero value enforces limits, kubelet's default.
	DisableCPUCFSQuota bool
	// CPUCFSQuotaPeriod is cpuCFSQuotaPeriod; 0 means
	// DefaultCPUCFSQuotaPeriod.
	CPUCFSQuotaPeriod time.Duration
}

// SeccompOptions are the KubeletConfiguration fields that shape seccomp.
type SeccompOptions struct {
	// SeccompDefault is seccompDefault: RuntimeDefault instead of
	// Unconfined for pods and containers that set no profile.
	SeccompDefault bool
	// SeccompProfileRoot is the directory of Localhost profiles
	// (<root-dir>/seccomp); "" refuses Localhost profiles.
	SeccompProfileRoot string
}

// SandboxOptions are what SandboxConfig needs besides the pod.
type SandboxOptions struct {
	// Attempt numbers the sandboxes of one pod: 0 for the first, one more
	// each time it is re-created.
	Attempt uint32
	// PodLogsDir is podLogsDir; "" means DefaultPodLogsDir.
	PodLogsDir string
	// CgroupParent is the pod's cgroup, an absolute path (the caller
	// computes it with cgroups.Layout.Pod: /kubepods/burstable/pod<uid>,
	// or the pod slice's path under the systemd driver, as kubelet passes
	// it). Required: a relative parent nests under containerd's own cgroup.
	CgroupParent string
	// ClusterDNS are clusterDNS, the cluster resolver IPs.
	ClusterDNS []string
	// ClusterDomain is clusterDomain, e.g. "cluster.local".
	ClusterDomain string
	// ResolvConf is resolvConf, the host resolver file that DNS policy
	// Default (and the host search paths of ClusterFirst) come from; ""
	// means none: Default pods get the loopback resolver and search ".".
	ResolvConf string
	// NodeIPs are the node's addresses; with ResolvConf "" an IPv6 one
	// makes the loopback resolver ::1.
	NodeIPs []string
	CPUOptions
	SeccompOptions
	// UserNamespace is the pod's user namespace (the userns manager's
	// mappings for hostUsers: false, NODE mode otherwise); nil passes none.
	UserNamespace *runtimeapi.UserNamespace
	// Warn, when set, receives the pod warning events kubelet would record
	// (reason, message), e.g. DNSConfigForming when nameservers or search
	// paths were cut to the limits.
	Warn func(reason, message string)
	// ExclusiveCPUs tells that a container of the pod has CPUs of its own:
	// the sandbox's resources carry no CFS quota.
	ExclusiveCPUs bool
}

// ContainerOptions are what ContainerConfig needs besides the pod and the
// container.
type ContainerOptions struct {
	// RestartCount is the number of times the container was restarted: the
	// attempt, the log file name and an annotation.
	RestartCount int
	// RestartAllEpoch is the pod's RestartAllContainers epoch, recorded in
	// AnnotationRestartAllEpoch when above 0.
	RestartAllEpoch int
	// ImageRef is the image as resolved by the pull (an image ID or digest
	// reference); "" uses the container's image as written.
	ImageRef string
	// ImageUID and ImageUsername are the image's user (from ImageStatus),
	// to enforce runAsNonRoot when the pod sets no runAsUser; neither set
	// means root.
	ImageUID      *int64
	ImageUsername string
	// UserNamespace is the pod's user namespace, as in SandboxOptions.
	UserNamespace *runtimeapi.UserNamespace
	// ExtraSupplementalGroups follow the pod's supplemental groups and
	// fsGroup: the groups of its volumes' PV gid annotations (kubelet's
	// GetExtraSupplementalGroupsForPod).
	ExtraSupplementalGroups []int64
	// ThermalThrottlePaths are masked besides kubelet's default masked
	// paths (ThermalThrottlePaths, read by the caller).
	ThermalThrottlePaths []string
	// ImageVolumes maps the name of each image volume (volumes[].image)
	// the container mounts to the pulled image: mounted by the runtime,
	// read-only, with the mount's subPath as the image sub path.
	ImageVolumes map[string]*runtimeapi.ImageSpec
	// TargetContainerID, for an ephemeral container with
	// targetContainerName, is the runtime ID of the target: the container
	// joins its process namespace (CRI NamespaceMode TARGET).
	TargetContainerID string
	// PodIPs and HostIPs are the pod's and node's addresses, primary first,
	// for status.podIP(s) and status.hostIP(s) environment variables.
	PodIPs  []string
	HostIPs []string
	// NodeAllocatable stands in for the limits a container does not set in
	// resourceFieldRef environment variables (cpu, memory,
	// ephemeral-storage).
	NodeAllocatable v1.ResourceList
	// NodeMemoryCapacity is the node's memory capacity in bytes, for the
	// oom_score_adj of Burstable containers.
	NodeMemoryCapacity int64
	// HugePageSizes are the huge page sizes (bytes) of the node
	// (/sys/kernel/mm/hugepages): the container gets a hugetlb limit for
	// each, 0 for the sizes it does not ask for (kubelet's).
	HugePageSizes []int64
	CPUOptions
	// CPUSet is the cpuset the container runs on (cpuset_cpus: the CPU
	// manager's exclusive CPUs or its shared pool); "" leaves the
	// runtime's default, every CPU. ExclusiveCPUs, when those CPUs are
	// the container's own, drops its CFS quota (kubelet's
	// DisableCPUQuotaWithExclusiveCPUs).
	CPUSet        string
	ExclusiveCPUs bool
	// CPUSetMems is the container's cpuset.mems (the memory manager's
	// NUMA nodes); "" leaves the runtime's default.
	CPUSetMems string
	SeccompOptions
	// CgroupV2 tells that the node runs cgroup v2: the container gets
	// memory.oom.group=1 unless SingleProcessOOMKill.
	CgroupV2             bool
	SingleProcessOOMKill bool
	// MemoryQoS shapes memory.min, memory.low and memory.high of the
	// container (ContainerMemoryQoS).
	MemoryQoS MemoryQoSOptions
	// Swap decides the container's swap (ContainerSwapBehavior).
	Swap SwapOptions
	// TerminationMessageHostPath is the host file, created by the caller
	// under the pod's directory, mounted at the container's
	// terminationMessagePath; "" mounts none.
	TerminationMessageHostPath string
	// VolumeHostPaths maps the name of each volume the container mounts to
	// its prepared host directory (or file).
	VolumeHostPaths map[string]string
	// Devices are what device plugins allocated to the container
	// (ContainerDevices).
	Devices ContainerDevices
	// EtcHostsHostPath is the pod's managed hosts file, mounted at
	// /etc/hosts unless the container mounts something there; "" mounts
	// none.
	EtcHostsHostPath string
	// SubPath returns the host path to mount for a volume mount's subPath
	// (after subPathExpr expansion), creating it when missing
	// (volume.Manager.SubPath); nil refuses subPaths. Its errors are the
	// container's CreateContainerConfigError message as they are.
	SubPath func(SubPathRequest) (string, error)
	// VolumeFile reads a file at a path inside one of the pod's volumes
	// (env fileKeyRef) and names the host file for messages; the path
	// never leaves the volume. nil refuses file references.
	VolumeFile func(volume, path string) (content []byte, hostPath string, err error)
	// ConfigMap and Secret look up the objects of the pod's namespace that
	// env and envFrom reference (errors for missing ones match
	// apierrors.IsNotFound); nil refuses such references.
	ConfigMap func(name string) (*v1.ConfigMap, error)
	Secret    func(name string) (*v1.Secret, error)
	// ServiceEnv are the service variables (ServiceEnv), defined before
	// the container's own env, which overrides them.
	ServiceEnv []v1.EnvVar
	// Warn, when set, receives the container warning events kubelet would
	// record (reason, message), e.g. InvalidEnvironmentVariableNames.
	Warn func(reason, message string)
}

// ErrUnsupported is matched (errors.Is) by every error that names pod
// fields kernelet cannot run yet.
var ErrUnsupported = errors.New("unsupported pod fields")

// UnsupportedField is one field of a pod kernelet cannot honour.
type UnsupportedField struct {
	// Path is the field, e.g. spec.volumes[2] or
	// spec.containers[0].envFrom.
	Path string
	// Reason says what is not supported, for people.
	Reason string
}

// UnsupportedError lists every unsupported field of a pod.
type UnsupportedError struct {
	Fields []UnsupportedField
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	b.WriteString(ErrUnsupported.Error())
	for i, f := range e.Fields {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(f.Path + ": " + f.Reason)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// SubPathRequest is one volume mount with a subPath or subPathExpr.
type SubPathRequest struct {
	// Container is the container's name; MountIndex the mount's index in
	// its volumeMounts.
	Container  string
	MountIndex int
	// Volume is the volume's name, VolumeHostPath its prepared host path.
	Volume, VolumeHostPath string
	// SubPath is the subPath, or the expanded subPathExpr.
	SubPath string
}
