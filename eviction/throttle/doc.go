// Package throttle throttles pods before the eviction manager evicts them
// (the KerneletConfiguration's memoryThrottle, cgroup v2 only): when a
// memory signal (memory.available, allocatableMemory.available) comes
// within twice its threshold plus minimum reclaim, it lowers memory.high
// of Burstable and BestEffort pod cgroups that use more than they
// request, in the eviction manager's memory rank order (RankMemory) and by
// the measured deficit, in the manner of Senpai and TMO: the kernel then
// reclaims from those pods (their page cache, and their anon pages into
// swap as far as LimitedSwap allows) instead of the node running out.
// Where the kernel has memory.reclaim (Effects.Reclaim), each cut is
// reclaimed from the pod first, in kernelet's context (its memory.high
// capped meanwhile at the usage the decision saw, so that a fast grower
// stops growing at once: growthCap; written back if the cut itself then
// cannot be written: undoCap), and a throttled
// pod's usage is kept Config.Ahead below its memory.high the same way
// (keepAhead), so the pod does not stall reclaiming for itself; those
// writes run behind the decisions, one writer per pod, in order
// (writes.go).
//
// The unit is the pod cgroup, not the container: eviction ranks and
// measures pods, kernelet owns pod cgroups (the runtime never rewrites
// their memory.high), and kubelet sets none on them unless pod-level
// resources ask for Memory QoS, so restoring is exact.
//
// Decisions (decide.go, pure over State and Input): the deficit is
// 2·(threshold + minimum reclaim) − available of the worst signal; the
// cuts already made (usage still above memory.high) count against it; each
// pod is cut to no less than its request, MinHigh and its usage minus what
// the kernel can reclaim from it (file pages plus the anon pages its swap
// allowance holds). The stall share of each throttled pod (memory.pressure
// "some" total over at least StallWindow) is watched: past MaxStall the
// pod's memory.high is restored and the pod left alone for Backoff, so a
// throttled pod cannot livelock; so is a throttled pod's that came near
// it with nothing left to reclaim, before it stalls (KindExhausted). Above 2.5 times the threshold the surplus
// is given back in reverse rank order; from 3 times on every pod gets
// kubelet's memory.high again (its Memory QoS value or max). A met hard
// memory threshold's eviction is held back while pods are throttled, for
// at most Deadline from when it was first met, and not at all once a
// signal falls below half its threshold; then the manager evicts as
// usual. A pod found below kubelet's memory.high at the first decision (an
// earlier run throttled it) is adopted and restored like the others.
//
// The Throttler (throttler.go) is the eviction manager's
// eviction.Throttler: it samples pods, writes memory.high and restores
// them only through Effects, and counts its actions in
// kernelet_memory_throttle_actions_total{action} with
// kernelet_memory_throttled_pods and
// kernelet_memory_throttle_reclaimed_bytes_total (metrics.go).
package throttle
