// Package runtime is kernelet's side of the CRI: it connects to the
// container runtime (containerd) through k8s.io/cri-client (runtime.go),
// answers what the runtime is and whether it is ready, and runs pods on it.
// It owns:
//   - what to do for a pod, decided purely from its spec and its runtime
//     status (actions.go: ComputePodActions; unhealthy.go: containers
//     killed for failed probes; restartall.go: a pod restarting all its
//     containers in place after a RestartAllContainers rule matched, its
//     plan without the instances from before and their statuses meanwhile;
//     deadline.go: Deadlines, which pods went
//     past activeDeadlineSeconds and when the next one does, and their
//     Failed status; readiness.go: WithReadiness, a status with the
//     readiness the probes say now; resize.go: ComputeResize, the
//     in-place resize of running containers to their allocated
//     requirements, decreases first, RestartContainer policies as
//     restarts, PodLevelResize for pod-level resources, and
//     ResizeInProgress; status_api.go also PodStatusResources, the
//     pod-level status.resources);
//   - doing it (manager.go: SyncPod creates the sandbox, pulls images,
//     writes the managed /etc/hosts and termination-message files, asks
//     the volume manager for the pod's volumes and starts init, sidecar,
//     regular and ephemeral containers, running postStart hooks;
//     manager_cgroups.go: the pod cgroup; manager_resize.go: an in-place
//     resize carried out — memory decreases checked against usage, the
//     pod cgroup widened, UpdateContainerResources, the pod cgroup set,
//     each container's new values and the pod's pod-level values
//     recorded (Actuated); kill.go: KillPod with preStop
//     hooks, grace periods (KillPodWithin: bounded by a deadline a
//     shorter grace brings forward, internal/grace) and sidecars stopped
//     last; leftovers.go: the directories a kill cut short by a crash
//     left behind; reaper.go: the housekeeping's Reaper, killing the
//     runtime's pods no source wants and removing those leftovers);
//   - image pulls per imagePullPolicy with kubelet's reasons, a bound on
//     parallel pulls and pull secrets (images.go, pullsecrets.go), and the
//     CrashLoopBackOff and image pull back-off (backoff.go);
//   - the runtime's view of a pod and its API status (status.go:
//     GetPodStatus; status_api.go: ToAPIStatus, ephemeralContainerStatuses,
//     containerStatuses[].resources and allocatedResources;
//     terminal.go: TerminalStatus, the final status of a terminated pod;
//     termmsg.go: termination messages from the file or the log tail;
//     runningpods.go: the kubelet API's /runningpods/);
//   - the oom_score_adj containers really got (oomscore.go), the
//     cgroup id → pod/container resolver over either cgroup driver's
//     layout (resolver.go), and the cgroup driver the runtime reports
//     over RuntimeConfig (cgroupdriver.go).
//
// The configs it hands the runtime are built by package
// agent/runtime/podconfig (pure: sandbox and container configs, DNS, env,
// labels and the spec hash, /etc/hosts content, runtime handler,
// admission validation); the volumes come from package agent/volume
// through the PodVolumes interface.
//
// It must not read cgroups or kernel state itself: the pod cgroup is
// package cgroups's (through PodCgroups, CgroupsAdapter), a process's
// oom_score_adj is read through package oom.
package runtime
