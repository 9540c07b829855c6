// Package eviction owns kernelet's node-pressure eviction: the signals it
// observes, the thresholds it compares them with, the ranking of pods, the
// admission of new pods under pressure, and the manager that decides.
//
// Beyond kubelet's signals it observes PSI (psi.go): the avg10 of the
// node's and kubepods' memory/io/cpu pressure lines, whose thresholds come
// from the KerneletConfiguration (ParseThresholds with Config.PSI), are met
// when ABOVE their value (OpGreaterThan) and set kernelet's
// kernelet.io/PSIPressure condition. The manager has two modes (mode.go):
// kernelet's and kubelet's (one pod per 10 s decision, no wake-ups, a wait
// for the evicted pod's cleanup), and a dry run that only lists, logs and
// exports what it would evict. With PodStats set it reads the node first
// and pods only when a threshold is met; Decided lets the agent re-arm v1
// usage notifications at UsageThresholds (rearm.go).
//
// The split follows kubelet's: types and thresholds (types.go,
// threshold.go: ParseThresholds turns the KubeletConfiguration eviction
// maps into typed Threshold values, reporting every bad entry by its field
// path); pure helpers over plain values — signals from stats (stats.go:
// Observe), thresholds met with minimum-reclaim hysteresis, soft grace
// periods and the pressure transition period (met.go), ranking per signal
// (rank.go), kubelet's messages and the evicted status (message.go),
// admission under pressure (admit.go); and a Manager (manager.go,
// reclaim.go) whose side effects are functions handed to it: Stats reads
// the node and pods at decision time, ActivePods lists candidates, Evict
// starts a pod's eviction, ThresholdMet records the node event.
//
// The manager decides on every WakeBy (a kernel notification: memcg usage
// thresholds, memory.events, OOM, PSI triggers — wired by the agent) and
// on a fallback tick; each decision's trigger (the first notification's
// WakeSource, or the tick) is logged with the evictions it starts and kept
// in their Records, and each notification counts in
// kernelet_eviction_wakeups_total{source} (wake.go). Unlike kubelet's one pod per 10 s loop, one decision evicts as many
// pods, in rank order, as the measured deficit (threshold + minimum reclaim
// − available) needs, estimated from each pod's usage; pods already evicted
// for a signal count as freeing their usage until their cgroup is gone or
// a cooldown passes (for a disk signal, until DiskReleased says their
// containers and volumes are gone and the space shows as available, at
// most DiskCooldown), so a pod whose memory is being freed does not cause
// more evictions — unless the deficit grows more than a quarter of the
// threshold past the deficit they were evicted for and their own growth
// since (Uncovered: another pod grows while a slow runtime still stops
// them), then that growth is evicted for too. Critical pods (podutil.IsCritical: static, mirror,
// priority ≥ 2000000000) are never evicted.
//
// Disk (disk.go, reclaim_disk.go, localstorage.go): nodefs.*, imagefs.*
// and containerfs.* are observed from the filesystems the agent
// measures; each pod's local ephemeral storage (PodStorage: emptyDirs
// not backed by memory, writable layers, logs) is split per filesystem
// as kubelet does (a dedicated image filesystem holds the writable
// layers, the node filesystem the logs and volumes). Before evicting for
// a disk signal the manager runs the node-level reclaims
// (NodeReclaimFor: container GC, then image GC — with a dedicated image
// filesystem, nodefs signals get container GC only, a kernelet
// difference: kubelet tries nothing there, yet dead containers' logs
// are on the node filesystem), at most every NodeReclaimInterval, reads
// the stats again and evicts only when a threshold is still met
// (minimum reclaim included); pods rank as kubelet's RankDisk. With
// localStorageCapacityIsolation, every decision first evicts the pods
// over an emptyDir sizeLimit or an ephemeral-storage limit
// (CheckLocalStorage; kubelet's messages, no DisruptionTarget, counted
// as emptydirfs.limit, ephemeralpodfs.limit, ephemeralcontainerfs.limit)
// and, as kubelet, ends the decision there when it evicted any.
//
// Reaction latency (reaction.go): Crossings keeps, per met threshold, when
// its crossing was first observed — the Wake that started the decision
// which first saw it met, else that decision's stats read — and the first
// eviction started for it observes kernelet_eviction_reaction_seconds
// (minus the threshold's grace period) once per crossing.
//
// Metrics (metrics.go; the caller registers them with Metrics.Register):
// kubelet's kubelet_evictions and kubelet_eviction_stats_age_seconds,
// kernelet's kernelet_eviction_reaction_seconds and
// kernelet_eviction_dry_run_pods. Manager.Status (status.go) is what
// `kernelet status` shows: conditions, thresholds against their signals,
// recent evictions.
//
// The package must not read files, call the runtime or kill anything
// itself: stats come in as values and pods are killed through a function
// handed to the manager.
package eviction
