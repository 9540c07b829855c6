package stats

import (
	"context"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/cgroups"
)

// DefaultMaxAge is how long a sweep is served before the next scrape reads
// a new one.
const DefaultMaxAge = time.Second

// Pod is one pod to read, as the agent knows it.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	// Cgroup is the pod cgroup's path, e.g. /kubepods/burstable/pod<uid>
	// or /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
	Cgroup    string
	StartTime time.Time
	// Containers are every container instance the pod's status names:
	// running ones are read, terminated ones count their OOM kills.
	Containers []Container
	// Storage is the pod's local ephemeral storage as the eviction
	// manager last measured it (emptyDirs, writable layers, logs; nil when
	// not measured): the Summary API's ephemeral storage and volumes.
	Storage *PodStorage
	// Claims are the pod's CSI volumes as their drivers report them
	// (agent/volumemanager): the Summary API's volume stats, with a
	// pvcRef for the PVC ones.
	Claims []ClaimUsage
}

// ClaimUsage is a CSI volume's usage as its driver reports it.
type ClaimUsage struct {
	// Name is the pod's volume, Claim its PVC in the pod's namespace
	// ("" for a CSI inline volume: no pvcRef, no kubelet_volume_stats_*).
	Name, Claim                              string
	Time                                     time.Time
	CapacityBytes, AvailableBytes, UsedBytes int64
	Inodes, InodesFree, InodesUsed           int64
}

// PodStorage is a pod's local ephemeral storage as the Summary API
// reports it; agent/pressure measures it.
type PodStorage struct {
	// Total is the pod's ephemeral storage as kubelet accounts it:
	// writable layers, logs and local ephemeral volumes.
	Total FsUsage
	// Volumes are the pod's local ephemeral volumes (emptyDirs not backed
	// by memory), by name.
	Volumes map[string]FsUsage
	// Containers are the newest instance of each container, by name.
	Containers map[string]ContainerStorage
}

// ContainerStorage is a container's writable layer (on the image
// filesystem) and logs (on the node filesystem); nil when unknown.
type ContainerStorage struct {
	Rootfs, Logs *FsUsage
}

// FsUsage is what something uses of a filesystem: bytes (allocated
// blocks) and inodes.
type FsUsage struct {
	Bytes, Inodes int64
}

// Container is one container instance of a pod.
type Container struct {
	Name string
	// ID is the runtime's container ID (without the scheme).
	ID string
	// Cgroup is the container's cgroup (the agent names it with its
	// cgroups.Layout: <pod>/<id>, <pod slice>/cri-containerd-<id>.scope);
	// empty is Pod.Cgroup/ID.
	Cgroup string
	Image  string
	// Running is true while the container runs: only running containers
	// are read.
	Running   bool
	StartTime time.Time
	// OOMKilled is true when the runtime reports this instance terminated
	// with reason OOMKilled.
	OOMKilled bool
}

// CgroupOf is the container's cgroup in the pod p.
func (c Container) CgroupOf(p Pod) string {
	if c.Cgroup != "" {
		return c.Cgroup
	}
	return path.Join(p.Cgroup, c.ID)
}

// Inventory returns the pods to read now.
type Inventory func(ctx context.Context) []Pod

// Config is what a Collector reads.
type Config struct {
	Reader *cgroups.Reader
	// Inventory lists the pods (nil: the node only).
	Inventory Inventory
	// NodeName names the node in the Summary API.
	NodeName string
	// Kubepods is the cgroup of all pods (the "pods" system container).
	Kubepods string
	// RootDir is a path on the node filesystem (nodefs), statfs'd for the
	// node's fs stats; "" leaves them out.
	RootDir string
	// ImageFsDir is a path on the runtime's image filesystem ("" : the
	// node filesystem's stats are reported for it too, as when they share
	// one).
	ImageFsDir string
	// BootTime is the node's start time (the root cgroup's).
	BootTime time.Time
	// NumCPU is the number of CPUs (machine_cpu_cores).
	NumCPU int
	// HugePages is the huge page capacity the node's availableBytes
	// leaves out (HugepageAwareEviction; 0: none).
	HugePages int64
	// MaxAge is how long a sweep is reused (0: DefaultMaxAge).
	MaxAge time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Sweep is one read of everything the endpoints serve.
type Sweep struct {
	// Time is when the read started.
	Time     time.Time
	NodeName string
	BootTime time.Time
	NumCPU   int
	Node     cgroups.NodeStats
	// HugePages is Config.HugePages.
	HugePages int64
	// Root is the root cgroup (the node's CPU, memory and I/O usage);
	// Kubepods is the pods' cgroup. Found is false when unread.
	Root, Kubepods CgroupSample
	// NodeFs and ImageFs are nil when not read.
	NodeFs, ImageFs *cgroups.FSStats
	Pods            []PodSample
	// Errors counts the cgroups that could not be read for another
	// reason than being gone (container_scrape_error, resource_scrape_error).
	Errors int
}

// CgroupSample is one cgroup's stats with the CPU rate since the previous
// sweep that read it.
type CgroupSample struct {
	Found bool
	Stats cgroups.CgroupStats
	// NanoCores is the CPU usage rate since the previous sweep (unknown
	// on the first read of the cgroup).
	NanoCores cgroups.Value
}

// PodSample is a pod with its cgroup's and running containers' stats.
type PodSample struct {
	Pod
	CgroupSample
	Containers []ContainerSample
}

// ContainerSample is a running container (or, with Found false and a
// non-zero OOMEvents, a container name whose instances are all gone) and
// its stats.
type ContainerSample struct {
	Container
	CgroupSample
	// OOMEvents is the container's OOM kills over every instance seen
	// while the pod lives.
	OOMEvents uint64
}

// SweepSource gives the current sweep: a *Collector, or the agent's
// handle on one that exists only once the pod side runs.
type SweepSource interface {
	Get(ctx context.Context) (*Sweep, error)
}
