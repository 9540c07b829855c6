// Package pressure is the pressure side of the pod lifecycle: it builds
// the eviction manager (eviction.Manager) from the agent's configuration
// and the effects the agent hands in (Config, Effects in types.go), and
// owns what feeds it from the kernel.
//
//   - Stats at decision time: the node's memory (memory.available out of
//     MemTotal less the huge pages Config.HugePages leaves out, kubelet's
//     HugepageAwareEviction) and kubepods', PIDs,
//     nodefs statfs and, with PSI thresholds only, PSI (the avg10 values
//     of the PSI signals); a pod's cgroup and running containers are read
//     only when a met threshold needs them.
//   - Local storage: the image filesystem (CRI ImageFsInfo, then statfs),
//     the writable layers (CRI ContainerStats), the pods' disk emptyDirs
//     and logs (walked as du does, bounded), measured again every 10 s,
//     every second near a disk threshold. Signals.PodStorage hands the last
//     measurement to the Summary API (agent/stats) without measuring.
//   - Kernel notifications (Signals.Watch): v1 memcg usage thresholds of
//     the root and kubepods, re-armed after each decision when the page
//     cache moved them; OOM of kubepods (v1 oom_control); on cgroup v2
//     a 50 ms poll of kubepods' memory.current in their stead
//     (usagepoll.go) and every change of kubepods' memory.events; a PSI trigger on kubepods'
//     memory pressure (500 ms window where allowed). Each watch is one
//     goroutine that calls the manager's WakeBy with its source on every
//     event.
//     Kubelet mode opens none.
//   - The memory throttler (KerneletConfiguration memoryThrottle, cgroup
//     v2 only: eviction/throttle decides): the pod cgroups' memory read
//     for it and its writes (memory.high, memory.reclaim bounded by each
//     container's swap room), in throttle.go; at start a log of the swap
//     devices that limit it (swapdev.go).
//   - Admission (Signals.Admit): kubelet's first admit handler, rejecting
//     pods under pressure with reason Evicted.
//
// It does not evict by itself: the kill, the pod status, the event and
// the live hub are the agent's (Effects.Evict), as are the pod list, the
// PLEG cache, the EvictionThresholdMet node event and the node-level
// reclaims tried before a disk eviction (container and image GC). It must
// not import the agent root; the kernel side (cgroups, eviction) never
// imports it.
package pressure
