package node

import (
	"context"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/clientset"
)

// Machine is what the host says about itself: identity, OS and the
// resources it has. ReadMachine reads it; it is read once at start (the
// boot ID and the hardware do not change while the agent runs).
type Machine struct {
	// MachineID is /etc/machine-id (or /var/lib/dbus/machine-id).
	MachineID string `json:"machineID,omitempty"`
	// SystemUUID is the DMI product UUID; empty when unreadable.
	SystemUUID string `json:"systemUUID,omitempty"`
	// BootID is /proc/sys/kernel/random/boot_id.
	BootID string `json:"bootID,omitempty"`
	// KernelVersion is the kernel release (uname -r).
	KernelVersion string `json:"kernelVersion,omitempty"`
	// OSImage is PRETTY_NAME of os-release, "Linux" when there is none.
	OSImage string `json:"osImage,omitempty"`
	// OperatingSystem and Architecture are GOOS and GOARCH.
	OperatingSystem string `json:"operatingSystem"`
	Architecture    string `json:"architecture"`
	// CPUs is the number of online CPUs.
	CPUs int `json:"cpus"`
	// MemoryBytes is MemTotal.
	MemoryBytes int64 `json:"memoryBytes"`
	// SwapBytes is SwapTotal (status.nodeInfo.swap.capacity).
	SwapBytes int64 `json:"swapBytes"`
	// HugePages maps a huge page size in bytes to the number of pages
	// reserved in that size (every size the kernel supports, 0 included).
	HugePages map[int64]int64 `json:"hugePages,omitempty"`
	// EphemeralStorageBytes is the size of the filesystem of the agent's
	// root directory (--root-dir).
	EphemeralStorageBytes int64 `json:"ephemeralStorageBytes"`
}

// RuntimeCondition is one condition of the CRI runtime's status
// (RuntimeReady, NetworkReady).
type RuntimeCondition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// RuntimeState is what the agent last learnt from the CRI runtime.
type RuntimeState struct {
	// Name and Version are the CRI Version response's runtime name and
	// version ("containerd", "v1.7.2").
	Name, Version string
	// LastSync is when the runtime last answered a Status call; zero when
	// it never has.
	LastSync time.Time
	// Conditions are that Status answer's conditions.
	Conditions []RuntimeCondition
	// Handlers are the runtime handlers the Status answer lists ("" is
	// the default handler), with what each supports.
	Handlers []RuntimeHandler
	// SupplementalGroupsPolicy is the Status answer's feature of that
	// name; nil when the runtime did not say.
	SupplementalGroupsPolicy *bool
}

// RuntimeHandler is one CRI runtime handler (runtime class) and the
// features it supports.
type RuntimeHandler struct {
	Name                    string
	RecursiveReadOnlyMounts bool
	UserNamespaces          bool
}

// Image is one image the runtime holds (CRI ListImages).
type Image struct {
	RepoTags    []string
	RepoDigests []string
	SizeBytes   uint64
}

// Inputs are the node's changing facts, gathered by the agent before every
// status computation.
type Inputs struct {
	// Runtime is the CRI runtime's last known state.
	Runtime RuntimeState
	// HealthErrors are failing health checks that make the node not ready,
	// already in kubelet's words (e.g. PLEG's "PLEG is not healthy: pleg
	// was last seen active 3m0.5s ago; threshold is 3m0s").
	HealthErrors []error
	// NodeIPs are the node's addresses, primary first.
	NodeIPs []net.IP
	// Images are the runtime's images, in any order.
	Images []Image
	// MemoryPressure, DiskPressure and PIDPressure are the eviction
	// manager's verdicts; false until it exists.
	MemoryPressure, DiskPressure, PIDPressure bool
	// PSIPressure is kernelet's own kernelet.io/PSIPressure condition
	// (a PSI eviction threshold met); nil leaves the condition out (the
	// KerneletConfiguration's psiNodeCondition is off).
	PSIPressure *bool
	// Contention are the KEP-5394 PSI conditions to report
	// (SystemMemoryContentionPressure, …; the KerneletConfiguration's
	// psiContentionThresholds), each with its threshold and the PSI just
	// read; empty leaves them out.
	Contention []eviction.ContentionSample
	// DeviceCapacity and DeviceAllocatable are the device plugin
	// resources by name (agent/devicemanager): capacity counts every
	// device, allocatable the healthy ones; a resource whose plugin is gone
	// is at 0 in both. nil: no device plugin resources.
	DeviceCapacity, DeviceAllocatable map[string]int64
	// VolumesInUse are the unique names of the volumes the node's pods
	// use or are about to use, sorted (the CSI volume manager's); the
	// status's volumesInUse. volumesAttached is the attach/detach
	// controller's and is left as it is.
	VolumesInUse []v1.UniqueVolumeName
}

// InputsFunc gathers the Inputs; it is called once per status computation
// and, after start until a status computed says Ready, every 100 ms to see
// whether it would be: it returns the agent's latest known state and must
// not block for long (it bounds any RPC of its own by ctx).
type InputsFunc func(ctx context.Context) Inputs

// Config is what the Controller needs. The agent builds it once.
type Config struct {
	// NodeName is the Node's name.
	NodeName string
	// Hostname is the kubernetes.io/hostname label and the Hostname
	// address (default NodeName).
	Hostname string
	// Kubelet is the defaulted KubeletConfiguration. Used: registerNode,
	// registerWithTaints, maxPods, podsPerCore, kubeReserved,
	// systemReserved, nodeStatusUpdateFrequency, nodeStatusReportFrequency,
	// nodeLeaseDurationSeconds, nodeStatusMaxImages, port.
	Kubelet *kubeletv1beta1.KubeletConfiguration
	// Thresholds are the parsed eviction thresholds (config.Config.Thresholds);
	// the hard ones reduce allocatable.
	Thresholds []eviction.Threshold
	// NodeLabels are --node-labels, set when the Node is created.
	NodeLabels map[string]string
	// Machine is the host (ReadMachine).
	Machine Machine
	// KubeletVersion is status.nodeInfo.kubeletVersion (KubeletVersion()).
	KubeletVersion string
	// DeclaredFeatures is status.declaredFeatures
	// (config.DeclaredFeatures), sorted.
	DeclaredFeatures []string
	// Client registers the Node. HeartbeatClient patches its status and
	// renews the Lease: no client-side rate limit, a timeout of
	// min(nodeLeaseDuration, nodeStatusUpdateFrequency). Either may be the
	// other.
	Client, HeartbeatClient clientset.Interface
	// OnRepeatedHeartbeatFailure, if set, is called when Lease renewals or
	// status updates fail repeatedly within one period, e.g. to close the
	// heartbeat client's idle connections (a dead TCP connection otherwise
	// lingers until the kernel gives up on it).
	OnRepeatedHeartbeatFailure func()
	// Recorder records the Node's events; nil records none.
	Recorder record.EventRecorder
	// Inputs gathers the changing facts of each status computation.
	Inputs InputsFunc
	// StartingMessage is the message of the Starting event
	// (default "Starting kernelet.").
	StartingMessage string
	// Clock is the controller's clock (default the real one).
	Clock clock.WithTicker
}

// Status is what `kernelet status` shows about the Node's reporting.
type Status struct {
	NodeName string `json:"nodeName"`
	// Registered is when the Node was last created or adopted; zero
	// until it has been.
	Registered time.Time `json:"registered,omitzero"`
	// LastStatusPatch is when the Node's status was last written.
	LastStatusPatch time.Time `json:"lastStatusPatch,omitzero"`
	// LastStatusCheck is when the status was last computed and found
	// either written or unchanged on the API server.
	LastStatusCheck time.Time `json:"lastStatusCheck,omitzero"`
	// LastLeaseRenew is the renewTime of the last Lease write that
	// succeeded.
	LastLeaseRenew time.Time `json:"lastLeaseRenew,omitzero"`
	// LastError is the last API error (registration, status or lease) and
	// LastErrorTime when it happened; they stay after a recovery (compare
	// with the times of success above).
	LastError     string    `json:"lastError,omitempty"`
	LastErrorTime time.Time `json:"lastErrorTime,omitzero"`
}
