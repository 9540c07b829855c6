package runtime

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/podutil"
)

// PodActions is what one sync of a pod must do, computed by
// ComputePodActions from the pod and its runtime status.
type PodActions struct {
	// KillPod: stop every container and sandbox of the pod before
	// anything else (the sandbox is re-created).
	KillPod bool
	// CreateSandbox: run a new sandbox with Attempt; SandboxReason says
	// why (for the SandboxChanged event).
	CreateSandbox bool
	Attempt       uint32
	SandboxReason string
	// SandboxID is the sandbox to start containers in when none is
	// created.
	SandboxID string
	// InitContainersToStart are indexes into spec.initContainers, to start
	// in this order (sidecars first, then at most one regular init
	// container).
	InitContainersToStart []int
	// ContainersToStart are indexes into spec.containers.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes into spec.ephemeralContainers:
	// those that never ran (they are never restarted), started only in a
	// sandbox that already runs.
	EphemeralContainersToStart []int
	// ContainersToKill maps container IDs to why they are killed.
	ContainersToKill map[string]KillInfo
	// BackOff lists the containers a restart of which is held back by
	// CrashLoopBackOff, by name.
	BackOff map[string]Waiting
	// InitFailed names the regular init container whose failure is not
	// to be restarted (podutil.ContainerShouldRestart: its rules, its
	// restartPolicy, the pod's) and so fails the pod; nothing more is
	// started.
	InitFailed string
	// RetryAt is when the earliest BackOff hold expires (zero: none): the
	// pod's next sync is due then.
	RetryAt time.Time
	// NeverRan lists, with CreateSandbox, the IDs of the instances to
	// remove before the new sandbox's containers are created: the newest
	// of each name when its start failed in a sandbox that is no longer
	// ready (neverRanInDeadSandbox). Its replacement takes its name and
	// restart count.
	NeverRan []string
}

// KillInfo says which container is killed and why.
type KillInfo struct {
	Name string
	// Reason is a short machine reason (e.g. "Unhealthy", "Changed",
	// "NotInSpec"); Message is for the Killing event.
	Reason  string
	Message string
	// Container is the status, for grace and hooks.
	Container *ContainerStatus
	// Grace, when set, is the time left for this container (a sidecar
	// stopped after the others) instead of the pod's grace period.
	Grace *time.Duration
}

// Kill reasons.
const (
	KillReasonChanged   = "Changed"
	KillReasonNotInSpec = "NotInSpec"
	KillReasonUnknown   = "Unknown"
	KillReasonInitDone  = "InitFailed"
	KillReasonStale     = "StaleSandbox"
)

// Empty tells whether the actions do nothing.
func (a PodActions) Empty() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 &&
		len(a.EphemeralContainersToStart) == 0 && len(a.ContainersToKill) == 0
}

// BackoffChecker answers whether the restart of a container whose newest
// instance exited at exit is still held back, and the delay that applies
// (Backoff implements it, at its clock: the Manager's, which gives now).
type BackoffChecker interface {
	Held(k BackoffKey, exit time.Time) (bool, time.Duration)
}

// ComputePodActions decides what a sync of pod must do given its runtime
// status st (nil: nothing runs) at now. It is pure; backoff is only read.
//
//   - Sandbox: a new one (attempt one above the newest) when there is none,
//     the newest is not ready, more than one is ready, or its network
//     namespace (host or pod) no longer matches the pod; everything is
//     killed first. A pod whose containers already ran and none of whose
//     regular containers may ever restart (podutil.MayRestart: restart
//     policy Never, no Restart rule) gets no new sandbox. The newest
//     instance of a container whose start failed in the sandbox that is
//     gone never ran: it is removed (NeverRan) and not counted.
//   - Init containers in order: a sidecar (restartPolicy Always) is started
//     when absent and restarted when it exited; a regular one is started
//     when absent, waited for while running, passed when it succeeded and
//     restarted when it failed and its restart decision says so
//     (podutil.ContainerShouldRestart on its exit code: its
//     restartPolicyRules, its restartPolicy, the pod's) — otherwise its
//     failure fails the pod (InitFailed). App containers wait for every
//     regular init container.
//   - App containers: started when absent; restarted when they exited and
//     the same decision says so (first matching restartPolicyRule with
//     action Restart; else the container's restartPolicy, else the pod's:
//     Always: always; OnFailure: exit code ≠ 0; Never: never), after the
//     CrashLoopBackOff delay; a running container whose hash changed is
//     killed and started again. One that ran in an older sandbox and may
//     never restart is not started in a new one.
//   - Ephemeral containers that never ran (in any sandbox) are started
//     in the running sandbox, even before initialization is done; they
//     are never restarted and never keep a pod running.
//   - Containers the spec does not name, and running ones of older
//     sandboxes, are killed.
//   - After a container exited with a RestartAllContainers rule, the
//     instances of the epochs before (RestartAllEpoch) are out of the
//     plan (SinceRestartAll): the pod starts again from its first init
//     container, and those still running are killed at once.
func ComputePodActions(pod *v1.Pod, st *PodStatus, now time.Time, backoff BackoffChecker) PodActions {
	a := computePodActions(pod, SinceRestartAll(pod, st), backoff)
	restartAllKills(pod, st, &a)
	return a
}

// computePodActions is ComputePodActions on the containers of pod's plan.
func computePodActions(pod *v1.Pod, st *PodStatus, backoff BackoffChecker) PodActions {
	a := PodActions{ContainersToKill: map[string]KillInfo{}, BackOff: map[string]Waiting{}}
	sb := st.Sandbox()
	changed, reason := sandboxChanged(pod, st)
	if changed {
		a.KillPod = sb != nil
		a.CreateSandbox = true
		a.SandboxReason = reason
		if sb != nil {
			a.Attempt = sb.Attempt + 1
		}
		if sb != nil && len(st.Containers) > 0 && !anyMayRestart(pod) {
			// Never restart containers that already ran: no new sandbox.
			a.CreateSandbox = false
			return a
		}
		if sb != nil && regularDone(pod, st) {
			// Every regular container ran and none is to run again: no
			// sandbox for nothing (init containers and sidecars do not run
			// alone).
			a.CreateSandbox = false
			return a
		}
		if sb != nil {
			a.NeverRan = neverRanInDeadSandbox(st)
		}
		computeContainers(pod, st, nil, backoff, &a)
		return a
	}
	a.SandboxID = sb.ID
	var current []*ContainerStatus
	for _, c := range st.Containers {
		if c.SandboxID == sb.ID {
			current = append(current, c)
		} else if c.State == ContainerRunning || c.State == ContainerUnknown {
			a.ContainersToKill[c.ID] = KillInfo{Name: c.Name, Reason: KillReasonStale, Container: c,
				Message: fmt.Sprintf("Container %s belongs to an old sandbox, it will be killed", c.Name)}
		}
	}
	initialized := computeContainers(pod, st, current, backoff, &a)
	if initialized && a.InitFailed == "" && len(a.ContainersToStart) == 0 && len(a.BackOff) == 0 && keptRunning(pod, current, a) == 0 {
		// Initialized, and the regular containers are done for good: the
		// pod stops — sidecars and sandbox too — instead of idling.
		a.KillPod = true
		a.InitContainersToStart = nil
		return a
	}
	a.EphemeralContainersToStart = ephemeralToStart(pod, st)
	return a
}

// neverRanInDeadSandbox lists the newest instance of each container name
// when it exited without ever starting (its StartContainer failed) and its
// sandbox is not ready or gone. The runtime stops a pod's containers
// before its sandbox (CRI StopPodSandbox) and reports each stop while the
// sandbox still reads ready, so a container killed that way is restarted
// in place and that start fails as the sandbox goes; no status read can
// tell that in time, but the sync that re-creates the sandbox can. Such an
// instance never ran: like one left created (nextRestartCount), it does
// not count as a restart. The same holds for one whose own start failed
// just before its sandbox died (kubelet would count that one).
func neverRanInDeadSandbox(st *PodStatus) []string {
	ready := map[string]bool{}
	for _, sb := range st.Sandboxes {
		ready[sb.ID] = sb.Ready
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range st.Containers { // newest first
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		if c.State == ContainerExited && c.StartedAt.IsZero() && !ready[c.SandboxID] {
			out = append(out, c.ID)
		}
	}
	return out
}

// ephemeralToStart lists the ephemeral containers of pod that never ran.
func ephemeralToStart(pod *v1.Pod, st *PodStatus) []int {
	var out []int
	for i := range pod.Spec.EphemeralContainers {
		if st.FindContainer(pod.Spec.EphemeralContainers[i].Name) == nil {
			out = append(out, i)
		}
	}
	return out
}

// anyMayRestart tells whether a regular container of pod may ever run
// again after it ran (podutil.MayRestart).
func anyMayRestart(pod *v1.Pod) bool {
	for i := range pod.Spec.Containers {
		if podutil.MayRestart(&pod.Spec.Containers[i], &pod.Spec) {
			return true
		}
	}
	return false
}

// regularDone tells whether every regular container of pod ran (in any
// sandbox) and none is to run again by its restart decision (Always
// restarts everything; OnFailure spares those that succeeded; a rule may
// restart a container whose policy is Never).
func regularDone(pod *v1.Pod, st *PodStatus) bool {
	for i := range pod.Spec.Containers {
		c := st.FindContainer(pod.Spec.Containers[i].Name)
		if c == nil || c.State != ContainerExited || shouldRestart(pod, &pod.Spec.Containers[i], c) {
			return false
		}
	}
	return len(pod.Spec.Containers) > 0
}

// keptRunning counts the regular containers of the current sandbox that
// run and are not being killed.
func keptRunning(pod *v1.Pod, current []*ContainerStatus, a PodActions) int {
	n := 0
	for i := range pod.Spec.Containers {
		c := newest(current, pod.Spec.Containers[i].Name)
		if c == nil || c.State != ContainerRunning {
			continue
		}
		if _, killed := a.ContainersToKill[c.ID]; !killed {
			n++
		}
	}
	return n
}

// sandboxChanged tells whether the pod needs a new sandbox, and why.
func sandboxChanged(pod *v1.Pod, st *PodStatus) (bool, string) {
	sb := st.Sandbox()
	if sb == nil {
		return true, "no sandbox"
	}
	ready := 0
	for _, s := range st.Sandboxes {
		if s.Ready {
			ready++
		}
	}
	switch {
	case ready > 1:
		return true, "more than one ready sandbox"
	case !sb.Ready:
		return true, "sandbox is not ready"
	case sb.HostNetwork != pod.Spec.HostNetwork:
		return true, "network namespace changed"
	case !pod.Spec.HostNetwork && sb.IP() == "":
		return true, "sandbox has no IP"
	}
	return false, ""
}

// newest returns the newest of cs named name.
func newest(cs []*ContainerStatus, name string) *ContainerStatus {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// shouldRestart tells whether exited container c, an instance of spec
// container ctr of pod, is to run again: podutil.ContainerShouldRestart
// on its exit code.
func shouldRestart(pod *v1.Pod, ctr *v1.Container, c *ContainerStatus) bool {
	return podutil.ContainerShouldRestart(ctr, &pod.Spec, c.ExitCode)
}

// computeContainers fills the init and app container actions, with
// current the containers of the sandbox in use (nil for a new sandbox).
func computeContainers(pod *v1.Pod, st *PodStatus, current []*ContainerStatus, backoff BackoffChecker, a *PodActions) (initialized bool) {
	p := &containerPlan{pod: pod, st: st, current: current, backoff: backoff, a: a}
	p.killNotInSpec()
	// Init is done once every regular init container succeeded, or an app
	// container exists in this sandbox (its init containers may be gone).
	appStarted := false
	for i := range pod.Spec.Containers {
		if newest(current, pod.Spec.Containers[i].Name) != nil {
			appStarted = true
		}
	}
	initDone, failed := p.initContainers(appStarted)
	if failed || (!initDone && !appStarted) {
		return false
	}
	p.appContainers()
	return true
}

// containerPlan is one computeContainers: the pod, its status, the
// containers of the sandbox in use, and the actions being filled.
type containerPlan struct {
	pod     *v1.Pod
	st      *PodStatus
	current []*ContainerStatus
	backoff BackoffChecker
	a       *PodActions
}

// restart decides for c, an exited instance of spec container spec,
// whether to restart now, recording a CrashLoopBackOff hold.
func (p *containerPlan) restart(c *ContainerStatus, spec *v1.Container) bool {
	if p.backoff == nil {
		return true
	}
	pod, a := p.pod, p.a
	held, d := p.backoff.Held(ContainerBackoffKey(pod, spec), c.FinishedAt)
	if held {
		a.BackOff[c.Name] = Waiting{Reason: ReasonCrashLoopBackOff, Message: CrashLoopMessage(d, c.Name, pod.Name, pod.Namespace, pod.UID)}
		if until := c.FinishedAt.Add(d); a.RetryAt.IsZero() || until.Before(a.RetryAt) {
			a.RetryAt = until
		}
		return false
	}
	return true
}

func (p *containerPlan) kill(c *ContainerStatus, reason, msg string) {
	p.a.ContainersToKill[c.ID] = KillInfo{Name: c.Name, Reason: reason, Message: msg, Container: c}
}

// killNotInSpec kills the running containers of the sandbox that the pod
// spec no longer names.
func (p *containerPlan) killNotInSpec() {
	known := map[string]bool{}
	for i := range p.pod.Spec.InitContainers {
		known[p.pod.Spec.InitContainers[i].Name] = true
	}
	for i := range p.pod.Spec.Containers {
		known[p.pod.Spec.Containers[i].Name] = true
	}
	for i := range p.pod.Spec.EphemeralContainers {
		known[p.pod.Spec.EphemeralContainers[i].Name] = true
	}
	for _, c := range p.current {
		if !known[c.Name] && (c.State == ContainerRunning || c.State == ContainerUnknown) {
			p.kill(c, KillReasonNotInSpec, fmt.Sprintf("Container %s is not in the pod spec, it will be killed", c.Name))
		}
	}
}

// replaceStale kills container s (kind "Container" or "Init container")
// when it runs an older definition than c or is in a state the agent
// cannot use (created, unknown), and tells whether a new instance starts;
// handled is false for an exited container, which its restart policy
// decides on.
func (p *containerPlan) replaceStale(s *ContainerStatus, c *v1.Container, kind string) (start, handled bool) {
	switch s.State {
	case ContainerRunning:
		if s.Hash != podconfig.HashContainer(c) {
			p.kill(s, KillReasonChanged, fmt.Sprintf("%s %s definition changed, will be restarted", kind, c.Name))
			return true, true
		}
		return false, true
	case ContainerCreated, ContainerUnknown:
		p.kill(s, KillReasonUnknown, fmt.Sprintf("%s %s is in state %s, it will be restarted", kind, c.Name, s.State))
		return true, true
	}
	return false, false
}

// initContainers fills the init container actions: sidecars (restartable
// init containers) start in order, each waiting for the one before it to
// have started, and restart whatever their exit; regular init containers
// run one at a time until each succeeded. initDone: every regular init
// container succeeded; failed: one failed and is not to be restarted
// (shouldRestart), the pod has failed.
func (p *containerPlan) initContainers(appStarted bool) (initDone, failed bool) {
	pod, a := p.pod, p.a
	initDone = true
	blocked := false
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		s := newest(p.current, ic.Name)
		if qos.IsRestartableInit(ic) {
			if blocked {
				continue
			}
			if s == nil {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				if ic.StartupProbe != nil {
					blocked = true // wait until it has started
				}
			} else if start, handled := p.replaceStale(s, ic, "Init container"); handled {
				if start {
					a.InitContainersToStart = append(a.InitContainersToStart, i)
				}
			} else if p.restart(s, ic) { // exited: sidecars always restart
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			} else if !appStarted {
				blocked = true
			}
			continue
		}
		if appStarted {
			continue
		}
		switch {
		case s != nil && s.State == ContainerExited && s.ExitCode == 0:
			continue
		case blocked:
			initDone = false
			continue
		}
		initDone = false
		blocked = true
		switch {
		case s == nil:
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		case s.State == ContainerRunning:
			// wait for it
		case s.State == ContainerCreated || s.State == ContainerUnknown:
			p.kill(s, KillReasonUnknown, fmt.Sprintf("Init container %s is in state %s, it will be restarted", ic.Name, s.State))
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		default: // failed
			if !shouldRestart(pod, ic, s) {
				// The pod has failed: it stops (sidecars, sandbox) and
				// nothing more is started.
				a.InitFailed = ic.Name
				a.InitContainersToStart = nil
				a.KillPod = true
				return false, true
			}
			if p.restart(s, ic) {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			}
		}
	}
	return initDone, false
}

// appContainers fills the app container actions, once init is done.
func (p *containerPlan) appContainers() {
	pod, a := p.pod, p.a
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s := newest(p.current, c.Name)
		if s == nil {
			// None in this sandbox: one that ran in an older sandbox and
			// must not run again (OnFailure: it succeeded) is done, and so
			// is one still running there that may never restart (it is
			// killed with its sandbox).
			if old := p.st.FindContainer(c.Name); old != nil && ranForGood(pod, c, old) {
				continue
			}
			a.ContainersToStart = append(a.ContainersToStart, i)
		} else if start, handled := p.replaceStale(s, c, "Container"); handled {
			if start {
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
		} else if shouldRestart(pod, c, s) && p.restart(s, c) { // exited
			a.ContainersToStart = append(a.ContainersToStart, i)
		}
	}
}

// ranForGood tells whether old, the newest instance of spec container c
// of pod (in an older sandbox), is not to run again: it exited and its
// restart decision says so, or it started and c may never restart.
func ranForGood(pod *v1.Pod, c *v1.Container, old *ContainerStatus) bool {
	if old.State == ContainerExited {
		return !shouldRestart(pod, c, old)
	}
	return !neverStarted(old) && !podutil.MayRestart(c, &pod.Spec)
}

// nextRestartCount is the restart count of the next instance of the
// container named name: one above the newest one's, 0 when none ran. A
// newest instance that was created but never started (the agent died
// between create and start; its kill removes it) did not run: the next
// instance takes its count.
func nextRestartCount(st *PodStatus, name string) int {
	if c := st.FindContainer(name); c != nil {
		if neverStarted(c) {
			return c.RestartCount
		}
		return c.RestartCount + 1
	}
	return 0
}

// neverStarted reports whether c was created and never started.
func neverStarted(c *ContainerStatus) bool {
	return c.State == ContainerCreated && c.StartedAt.IsZero()
}
