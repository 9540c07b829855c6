package eviction

import (
	"cmp"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ResourceInodes is the resource inode signals reclaim, as kubelet names
// it in its messages and events.
const ResourceInodes v1.ResourceName = "inodes"

// FsUsage is what something uses of a filesystem: bytes (allocated
// blocks) and inodes.
type FsUsage struct {
	Bytes, Inodes int64
}

func (u *FsUsage) add(o FsUsage) { u.Bytes += o.Bytes; u.Inodes += o.Inodes }

// ContainerStorage is a container's local ephemeral storage: its writable
// layer (on the image filesystem) and its logs (on the node filesystem);
// nil when unknown.
type ContainerStorage struct {
	Rootfs *FsUsage
	Logs   *FsUsage
}

// PodStorage is a pod's local ephemeral storage, as kubelet accounts it:
// its local ephemeral volumes (emptyDirs not backed by memory), and its
// containers' writable layers and logs.
type PodStorage struct {
	// Volumes are the usage of the pod's local ephemeral volumes, by
	// volume name.
	Volumes map[string]FsUsage
	// Containers are the storage of the pod's containers, by name (the
	// newest instance of each).
	Containers map[string]ContainerStorage
	// DedicatedImageFs: the runtime's image filesystem (writable layers)
	// is another filesystem than the node's (logs, volumes), kubelet's
	// "dedicated imagefs"; it decides which parts count for which signal.
	DedicatedImageFs bool
}

// Total is the pod's ephemeral storage usage, what the pod's
// ephemeral-storage limit is compared with: writable layers, logs and
// local ephemeral volumes, whichever filesystem they are on.
func (s *PodStorage) Total() FsUsage {
	var u FsUsage
	if s == nil {
		return u
	}
	for _, c := range s.Containers {
		u.add(c.usage(true, true))
	}
	for _, v := range s.Volumes {
		u.add(v)
	}
	return u
}

// usage is the container's rootfs and/or logs usage (unknown parts count 0).
func (c ContainerStorage) usage(rootfs, logs bool) FsUsage {
	var u FsUsage
	if rootfs && c.Rootfs != nil {
		u.add(*c.Rootfs)
	}
	if logs && c.Logs != nil {
		u.add(*c.Logs)
	}
	return u
}

// ContainerUsage is what kubelet compares with a container's
// ephemeral-storage limit: its logs, plus its writable layer unless the
// image filesystem is dedicated.
func (s *PodStorage) ContainerUsage(name string) (FsUsage, bool) {
	if s == nil {
		return FsUsage{}, false
	}
	c, ok := s.Containers[name]
	if !ok {
		return FsUsage{}, false
	}
	return c.usage(!s.DedicatedImageFs, true), true
}

// On is the pod's usage on the filesystem of disk signal sig, measured
// as kubelet ranks pods: without a dedicated image filesystem everything
// (writable layers, logs, volumes); with one, nodefs signals measure
// logs and volumes, imagefs and containerfs signals the writable layers.
func (s *PodStorage) On(sig Signal) FsUsage {
	var u FsUsage
	if s == nil {
		return u
	}
	rootfs, logs, volumes := true, true, true
	if s.DedicatedImageFs {
		node := sig == SignalNodeFsAvailable || sig == SignalNodeFsInodesFree
		rootfs, logs, volumes = !node, node, node
	}
	for _, c := range s.Containers {
		u.add(c.usage(rootfs, logs))
	}
	if volumes {
		for _, v := range s.Volumes {
			u.add(v)
		}
	}
	return u
}

// IsDiskSignal reports whether s is a filesystem signal (nodefs.*,
// imagefs.*, containerfs.*).
func IsDiskSignal(s Signal) bool {
	r := ResourceOf(s)
	return r == v1.ResourceEphemeralStorage || r == ResourceInodes
}

// diskUsage is the pod's usage of the resource of disk signal s on its
// filesystem: bytes for *.available, inodes for *.inodesFree.
func diskUsage(s Signal, ps PodStats) int64 {
	u := ps.Storage.On(s)
	if ResourceOf(s) == ResourceInodes {
		return u.Inodes
	}
	return u.Bytes
}

// podRequest is the pod's effective request of resource r.
func podRequest(p *v1.Pod, r v1.ResourceName) int64 {
	q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[r]
	return q.Value()
}

// RankDisk orders pods for disk signal s as kubelet does: pods without
// stats first, then pods using more of the signal's resource (bytes or
// inodes) on its filesystem than they request, then lower priority, then
// larger usage minus the ephemeral-storage request (kubelet subtracts
// that request for the inode signals too).
func RankDisk(s Signal, pods []*v1.Pod, stats map[types.UID]PodStats) []*v1.Pod {
	res := ResourceOf(s)
	get := func(p *v1.Pod) (int64, bool) {
		ps, ok := stats[p.UID]
		if !ok || ps.Storage == nil {
			return 0, false
		}
		return diskUsage(s, ps), true
	}
	exceeds := func(a, b *v1.Pod) int {
		ua, oka := get(a)
		ub, okb := get(b)
		if !oka || !okb {
			return trueFirst(!oka, !okb)
		}
		return trueFirst(ua > podRequest(a, res), ub > podRequest(b, res))
	}
	usage := func(a, b *v1.Pod) int {
		ua, oka := get(a)
		ub, okb := get(b)
		if !oka || !okb {
			return trueFirst(!oka, !okb)
		}
		return cmp.Compare(ub-podRequest(b, v1.ResourceEphemeralStorage), ua-podRequest(a, v1.ResourceEphemeralStorage))
	}
	return rank(pods, exceeds, byPriority, usage)
}

// NodeReclaim is a node-level reclaim the manager tries before evicting
// pods for a disk signal.
type NodeReclaim string

// The node-level reclaims, in the order they are tried.
const (
	// ReclaimContainers removes dead containers (and their logs) and
	// sandboxes no pod needs (ManagerConfig.DeleteAllUnusedContainers).
	ReclaimContainers NodeReclaim = "containers"
	// ReclaimImages removes every image no container uses
	// (ManagerConfig.DeleteUnusedImages).
	ReclaimImages NodeReclaim = "images"
)

// NodeReclaimFor is what is tried, in order, before evicting pods for
// signal s. Memory and PID signals: nothing (dropping the page cache is
// not the agent's job). Without a dedicated image filesystem every disk
// signal: container GC, then image GC, as kubelet. With one: imagefs and
// containerfs signals the same; nodefs signals container GC only — a
// deliberate difference: kubelet tries nothing there, yet dead
// containers' logs live on the node filesystem and go with them.
func NodeReclaimFor(s Signal, dedicatedImageFs bool) []NodeReclaim {
	if !IsDiskSignal(s) {
		return nil
	}
	if dedicatedImageFs && (s == SignalNodeFsAvailable || s == SignalNodeFsInodesFree) {
		return []NodeReclaim{ReclaimContainers}
	}
	return []NodeReclaim{ReclaimContainers, ReclaimImages}
}

// DiskNear reports whether a disk threshold of ths is met on obs, or
// its signal is within its minimum reclaim of it (a met threshold stays
// met there). The agent measures pods' local storage more often then:
// the filesystems themselves are read at every decision, so the first
// decision that finds a threshold met measures the pods afresh.
func DiskNear(ths []Threshold, obs Observations) bool {
	for _, t := range ths {
		o, ok := obs[t.Signal]
		if ok && IsDiskSignal(t.Signal) && o.Available < ThresholdQuantity(t, o)+MinReclaimQuantity(t, o) {
			return true
		}
	}
	return false
}
