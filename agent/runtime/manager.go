package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"k8s.io/client-go/util/flowcontrol"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/google/renameio/v2/maybe"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/httpget"
	"github.com/kernelet/kernelet/internal/kubeversion"
)

// ManagerConfig wires a Manager.
type ManagerConfig struct {
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// Cgroups makes and removes pod cgroups (required).
	Cgroups PodCgroups
	// PodLogsDir is podLogsDir; "" means podconfig.DefaultPodLogsDir.
	PodLogsDir string
	// PodsDir holds per-pod directories (<PodsDir>/<uid>), where the
	// termination-message files live; "" means /var/lib/kubelet/pods.
	PodsDir string
	// RuntimeHandler is the CRI runtime handler of sandboxes of pods
	// without runtimeClassName ("" default).
	RuntimeHandler string
	// ParallelPulls bounds the image pulls that run at once (1:
	// serializeImagePulls; 0: no bound). Only PullImage waits for a slot:
	// pods whose images are present start meanwhile.
	ParallelPulls int
	// PullQPS and PullBurst are registryPullQPS and registryBurst: the
	// pulls asked of the runtime per second and in a burst (PullQPS 0: no
	// limit).
	PullQPS   float32
	PullBurst int
	// RuntimeClasses looks up the RuntimeClass a pod names (a lister);
	// nil: standalone (see podconfig.RuntimeHandler).
	RuntimeClasses podconfig.RuntimeClassGetter
	// Clock drives back-offs and timings; nil means the real clock.
	Clock clock.Clock
	// Backoff is the CrashLoopBackOff and image pull state; nil makes one
	// on Clock (with CrashLoopInitial and CrashLoopMax when set). Share one
	// across Managers that run the same pods.
	Backoff                        *Backoff
	CrashLoopInitial, CrashLoopMax time.Duration
	// HTTPClient runs httpGet hooks; nil uses a client with a 10 s
	// timeout.
	HTTPClient *http.Client
	// RemoveCgroupTimeout bounds how long KillPod retries a busy pod
	// cgroup; 0 means 5 s.
	RemoveCgroupTimeout time.Duration
	// ProcRoot is where procfs is mounted (for containers' oom_score_adj);
	// "" means /proc.
	ProcRoot string
	// Volumes sets up the pod volumes before the containers and tears
	// them down after them (agent/volume.Manager); nil leaves volumes to
	// SyncOptions.Container.VolumeHostPaths.
	Volumes PodVolumes
	// EtcHosts is the node's hosts file, the base of host-network pods'
	// managed hosts files; "" means /etc/hosts.
	EtcHosts string
	// Objects gives the configMaps and secrets env and envFrom reference;
	// nil refuses such references (standalone).
	Objects EnvObjects
	// Services lists the services whose variables containers get
	// (podconfig.ServiceEnv); an error (the list was never read) holds the
	// container back. nil: no service variables (standalone).
	Services func() ([]*v1.Service, error)
	// Actuated keeps what each running container was given, for in-place
	// resize (allocation.Store over actuated_pods_state); nil: containers
	// are never resized in place.
	Actuated Actuated
	// UserNamespaces hands out the user namespaces of pods with
	// hostUsers: false (agent/userns.Manager); nil: such pods do not run
	// and no user namespace options are passed.
	UserNamespaces UserNamespaces
	// ThermalThrottlePaths are masked in containers besides kubelet's
	// default masked paths (podconfig.ThermalThrottlePaths of the node).
	ThermalThrottlePaths []string
	// Devices gives what device plugins allocated to a container, at its
	// creation (agent/devicemanager.Manager.ContainerDevices); an error
	// holds the container back (CreateContainerConfigError). nil: none.
	Devices func(ctx context.Context, pod *v1.Pod, c *v1.Container) (podconfig.ContainerDevices, error)
	// CPUs are the CPU and memory managers' assignments (nil: none;
	// containers run on every CPU and memory node with their CFS quota).
	CPUs Pinning
	// Claims prepares the pods' DRA ResourceClaims before their sandbox
	// is created, unprepares them once their containers stopped, and
	// gives each container its claims' CDI devices (agent/dra.Manager);
	// nil: pods with resource claims never get there (refused).
	Claims DynamicResources
}

// Pinning is where the CPU and memory managers put the containers of a
// pod (agent/cpumanager, agent/memorymanager).
type Pinning interface {
	// CPUSet is the cpuset container name runs on; "" leaves the
	// runtime's default.
	CPUSet(podUID types.UID, name string) string
	// Exclusive tells whether the container has CPUs of its own: it runs
	// without a CFS quota, and so do its pod's sandbox and cgroup
	// (kubelet's DisableCPUQuotaWithExclusiveCPUs, locked on).
	Exclusive(podUID types.UID, name string) bool
	// MemoryNodes is the cpuset.mems of container name: the NUMA nodes
	// its memory is pinned to; "" leaves the runtime's default.
	MemoryNodes(podUID types.UID, name string) string
}

// PodHasExclusiveCPUs tells whether a container of pod has CPUs of its
// own (a nil Pinning: none has).
func PodHasExclusiveCPUs(a Pinning, pod *v1.Pod) bool {
	if a == nil {
		return false
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if a.Exclusive(pod.UID, c.Name) {
				return true
			}
		}
	}
	return false
}

// cpusOf sets the CPU manager's cpuset and exclusivity of container name
// in opts.
func (m *Manager) cpusOf(pod *v1.Pod, name string, opts *podconfig.ContainerOptions) {
	if m.cpus != nil {
		opts.CPUSet, opts.ExclusiveCPUs = m.cpus.CPUSet(pod.UID, name), m.cpus.Exclusive(pod.UID, name)
		opts.CPUSetMems = m.cpus.MemoryNodes(pod.UID, name)
	}
}

// EnvObjects gives configMaps and secrets by namespace and name (errors
// for missing ones match apierrors.IsNotFound).
type EnvObjects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// PodVolumes sets up and tears down the volumes of pods.
type PodVolumes interface {
	// SetUp makes pod's volumes ready and returns each one's host path by
	// volume name; the error joins one error per volume that failed (those
	// are missing from the map).
	SetUp(ctx context.Context, pod *v1.Pod) (map[string]string, error)
	// TearDown removes the volumes of pod uid once its containers are gone.
	TearDown(ctx context.Context, uid types.UID) error
	// SubPath returns the host path to mount for a subPath of pod's
	// volume, creating it when missing.
	SubPath(ctx context.Context, pod *v1.Pod, req podconfig.SubPathRequest) (string, error)
}

// DefaultPodsDir is where per-pod directories live by default.
const DefaultPodsDir = "/var/lib/kubelet/pods"

// Manager runs pods on a CRI runtime: it computes and executes the actions
// of a sync, kills pods, and reads their runtime status. Calls for one pod
// must be serialized by the caller (a pod worker); different pods may be
// synced concurrently.
type Manager struct {
	rs      internalapi.RuntimeService
	is      internalapi.ImageManagerService
	cg      PodCgroups
	logs    string
	pods    string
	handler string
	clock   clock.Clock
	backoff *Backoff
	hc      *http.Client
	hookUA  string
	rmWait  time.Duration
	proc    string
	vols    PodVolumes
	objs    EnvObjects
	hosts   string
	svcs    func() ([]*v1.Service, error)
	rcs     podconfig.RuntimeClassGetter
	pulls   pullSlots
	// pullRate limits the pull requests (nil: none).
	pullRate flowcontrol.RateLimiter
	act      Actuated
	userns   UserNamespaces
	thermal  []string
	devices  func(ctx context.Context, pod *v1.Pod, c *v1.Container) (podconfig.ContainerDevices, error)
	cpus     Pinning
	claims   DynamicResources

	// netErr is the last NetworkReady answer.
	netMu  sync.Mutex
	netErr error
}

// NewManager returns a Manager.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Runtime == nil || cfg.Images == nil || cfg.Cgroups == nil {
		return nil, errors.New("runtime manager: runtime, image service and cgroups are required")
	}
	m := &Manager{rs: cfg.Runtime, is: cfg.Images, cg: cfg.Cgroups, logs: cfg.PodLogsDir, pods: cfg.PodsDir,
		handler: cfg.RuntimeHandler, clock: cfg.Clock, backoff: cfg.Backoff, hc: cfg.HTTPClient,
		rmWait: cfg.RemoveCgroupTimeout, proc: cfg.ProcRoot, vols: cfg.Volumes, objs: cfg.Objects, hosts: cfg.EtcHosts, svcs: cfg.Services, rcs: cfg.RuntimeClasses, pulls: newPullSlots(cfg.ParallelPulls), act: cfg.Actuated,
		userns: cfg.UserNamespaces, thermal: cfg.ThermalThrottlePaths, devices: cfg.Devices, cpus: cfg.CPUs, claims: cfg.Claims}
	if m.logs == "" {
		m.logs = podconfig.DefaultPodLogsDir
	}
	if m.pods == "" {
		m.pods = DefaultPodsDir
	}
	if m.hosts == "" {
		m.hosts = "/etc/hosts"
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.backoff == nil {
		if cfg.CrashLoopMax > 0 {
			m.backoff = NewBackoffWith(m.clock, cfg.CrashLoopInitial, cfg.CrashLoopMax)
		} else {
			m.backoff = NewBackoff(m.clock)
		}
	}
	m.hookUA = httpget.UserAgent("kube-lifecycle", kubeversion.Get())
	if m.hc == nil {
		m.hc = hookClient()
	}
	if m.rmWait == 0 {
		m.rmWait = 5 * time.Second
	}
	if cfg.PullQPS > 0 {
		m.pullRate = flowcontrol.NewTokenBucketRateLimiterWithClock(cfg.PullQPS, max(cfg.PullBurst, 1), m.clock)
	}
	return m, nil
}

// Backoff is the Manager's back-off state.
func (m *Manager) Backoff() *Backoff { return m.backoff }

// SyncOptions are the node-dependent inputs of a sync.
type SyncOptions struct {
	// Sandbox is the base of the sandbox options; SyncPod sets Attempt,
	// CgroupParent and PodLogsDir.
	Sandbox podconfig.SandboxOptions
	// Container is the base of the container options; SyncPod sets
	// RestartCount, ImageRef, the image user, PodIPs and
	// TerminationMessageHostPath.
	Container podconfig.ContainerOptions
	// Unhealthy lists, by container ID, the running containers that
	// failed their liveness or startup probe: the sync kills them and
	// starts them again per the restart policy (KillUnhealthy).
	Unhealthy map[string]Unhealthy
	// NotStarted lists, by container ID, the running containers whose
	// startup probe has not passed yet: an initializing pod waits for its
	// sidecars among them (HoldForStartup).
	NotStarted map[string]bool
}

// Step is the outcome of one action of a sync or kill.
type Step struct {
	// Action is e.g. KillPodSandbox, KillContainer, EnsureCgroup,
	// CreatePodSandbox, StartContainer, RemoveCgroup.
	Action string
	// Target is the container name or sandbox/container ID.
	Target string
	Err    error
	// Reason is the Waiting reason of a failed start.
	Reason string
}

// Actions recorded in steps.
const (
	ActionKillPodSandbox   = "KillPodSandbox"
	ActionKillContainer    = "KillContainer"
	ActionEnsureCgroup     = "EnsureCgroup"
	ActionCreatePodSandbox = "CreatePodSandbox"
	ActionStartContainer   = "StartContainer"
	ActionRemoveContainer  = "RemoveContainer"
	ActionRemoveSandbox    = "RemovePodSandbox"
	ActionRemoveCgroup     = "RemoveCgroup"
	ActionRemoveLogs       = "RemoveLogs"
	ActionSetUpVolumes     = "SetUpVolumes"
	ActionTearDownVolumes  = "TearDownVolumes"
	ActionPrepareResources = "PrepareDynamicResources"
	ActionUnprepare        = "UnprepareDynamicResources"
)

// SyncResult is everything a sync or kill did.
type SyncResult struct {
	Actions PodActions
	Steps   []Step
	Events  []Event
	// Waiting holds, by container name, why a container that should run
	// does not (back-off, pull errors), for ToAPIStatus.
	Waiting map[string]Waiting
	// SandboxID is the sandbox in use after the sync.
	SandboxID string
	// Started maps started container names to their IDs.
	Started map[string]string
	// Stopped is a killed pod's runtime status once its containers
	// stopped, before their removal (KillPodWithin; nil when unknown).
	Stopped *PodStatus
	// Resize is the in-place resize the sync carried out (or tried: the
	// ActionResize step holds its error) and how long it took.
	Resize     ResizePlan
	ResizeTook time.Duration
	mu         sync.Mutex
}

func newResult() *SyncResult {
	return &SyncResult{Waiting: map[string]Waiting{}, Started: map[string]string{}}
}

func (r *SyncResult) step(action, target string, err error, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Steps = append(r.Steps, Step{Action: action, Target: target, Err: err, Reason: reason})
}

func (r *SyncResult) event(container, typ, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Events = append(r.Events, Event{Container: container, Type: typ, Reason: reason, Message: msg})
}

func (r *SyncResult) normal(reason, msg string) { r.event("", v1.EventTypeNormal, reason, msg) }
func (r *SyncResult) warn(reason, msg string)   { r.event("", v1.EventTypeWarning, reason, msg) }

// normalFor and warnFor record an event on one of the pod's containers.
func (r *SyncResult) normalFor(container, reason, msg string) {
	r.event(container, v1.EventTypeNormal, reason, msg)
}
func (r *SyncResult) warnFor(container, reason, msg string) {
	r.event(container, v1.EventTypeWarning, reason, msg)
}

// Err joins the errors of every step.
func (r *SyncResult) Err() error {
	var errs []error
	for _, s := range r.Steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.Action, s.Target, s.Err))
		}
	}
	return errors.Join(errs...)
}

// Acted tells whether the sync took a step that may have changed the
// pod's runtime status (anything but the volume set-up that every sync
// runs): then its status is read back.
func (r *SyncResult) Acted() bool {
	for _, s := range r.Steps {
		if s.Action != ActionSetUpVolumes {
			return true
		}
	}
	return false
}

// SyncPod brings the runtime in line with pod: it computes the actions
// from st (the pod's current GetPodStatus) and runs them — kill the
// sandbox when it must be re-created, kill unwanted containers, ensure the
// pod cgroup, run the sandbox, start init containers in order, then app
// containers. The result records every step and event; Err() joins the
// failures.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, st *PodStatus, opts SyncOptions) *SyncResult {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "podUID", pod.UID)
	ctx = klog.NewContext(ctx, log)
	r := newResult()
	a, plan := m.computeSync(pod, st, opts)
	r.Actions = a
	r.Resize = plan
	for name, w := range a.BackOff {
		r.Waiting[name] = w
		r.normalFor(name, EventBackOff, BackOffEventMessage(name, pod.Name, pod.Namespace, pod.UID))
	}
	log.V(3).Info("sync pod", "createSandbox", a.CreateSandbox, "killPod", a.KillPod, "init", a.InitContainersToStart,
		"start", a.ContainersToStart, "kill", len(a.ContainersToKill), "backOff", len(a.BackOff))

	if a.KillPod {
		if a.CreateSandbox {
			r.normal(EventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		m.stopPod(ctx, pod, st, nil, nil, r)
		if r.Err() != nil {
			return r
		}
		if st = m.removeNeverRan(ctx, st, a.NeverRan, r); r.Err() != nil {
			return r
		}
	} else {
		m.killContainers(ctx, pod, a.ContainersToKill, nil, nil, r)
		if resetFailed(a, r) {
			return r // nothing restarts while an instance from before the reset runs
		}
	}
	if a.InitFailed != "" {
		r.step(ActionStartContainer, a.InitFailed, fmt.Errorf("%s: %w", a.InitFailed, ErrInitContainerFailed), "")
		return r
	}
	// Volumes are set up (and refreshed) on every sync, before anything
	// starts: a container never starts without its volumes.
	if !m.setUpVolumes(ctx, pod, &opts, r) {
		return r
	}
	if !plan.Empty() {
		m.resize(ctx, pod, st, plan, opts.Container, r)
	}
	if !a.CreateSandbox && (a.SandboxID == "" || len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 && len(a.EphemeralContainersToStart) == 0) {
		return r // nothing to start: no cgroup, sandbox or config work
	}

	parent, err := m.cg.EnsurePod(ctx, pod)
	if err == nil {
		err = m.recordPodLevel(pod) // the pod cgroup has the allocated pod-level values
	}
	r.step(ActionEnsureCgroup, string(pod.UID), err, "")
	if err != nil {
		return r
	}
	sbOpts, handler, ok := m.sandboxOptions(ctx, pod, parent, &opts, r)
	if !ok {
		return r
	}
	sandboxID := a.SandboxID
	if a.CreateSandbox {
		sbOpts.Attempt = a.Attempt
		var ok bool
		if !m.prepareResources(ctx, pod, r) {
			return r
		}
		if sandboxID, ok = m.runSandbox(ctx, pod, sbOpts, handler, r); !ok {
			return r
		}
	} else {
		sbOpts.Attempt = st.Sandbox().Attempt
	}
	r.SandboxID = sandboxID
	resp, err := m.rs.PodSandboxStatus(ctx, sandboxID, false)
	if err != nil {
		r.step(ActionCreatePodSandbox, sandboxID, fmt.Errorf("sandbox status: %w", err), "")
		return r
	}
	podIPs := sandboxFromCRI(resp.GetStatus()).IPs
	if pod.Spec.HostNetwork || len(podIPs) == 0 {
		podIPs = opts.Container.HostIPs
	}
	sbCfg, err := podconfig.SandboxConfig(pod, sbOpts)
	if err != nil {
		r.step(ActionCreatePodSandbox, sandboxID, err, "")
		return r
	}
	if opts.Container.EtcHostsHostPath, err = m.writeEtcHosts(pod, podIPs, opts.Sandbox.ClusterDomain); err != nil {
		r.step(ActionCreatePodSandbox, sandboxID, fmt.Errorf("managed /etc/hosts: %w", err), "")
		return r
	}

	if podconfig.HasImageVolumes(pod) {
		// Pulled once per sync before any container starts (kubelet's).
		ivs := m.pullImageVolumes(ctx, pod, sbCfg, handler, r)
		opts.Container.ImageVolumes = ivs.specs()
		return m.startAll(ctx, pod, st, a, sandboxID, sbCfg, podIPs, opts.Container, ivs, r)
	}
	return m.startAll(ctx, pod, st, a, sandboxID, sbCfg, podIPs, opts.Container, nil, r)
}

// removeNeverRan removes the instances ids (PodActions.NeverRan), which
// never ran, and returns st without them, so that their replacements take
// their names and restart counts (nextRestartCount).
func (m *Manager) removeNeverRan(ctx context.Context, st *PodStatus, ids []string, r *SyncResult) *PodStatus {
	if len(ids) == 0 {
		return st
	}
	gone := map[string]bool{}
	for _, id := range ids {
		err := m.rs.RemoveContainer(ctx, id)
		if isNotFound(err) {
			err = nil
		}
		r.step(ActionRemoveContainer, id, err, "")
		gone[id] = err == nil
	}
	klog.FromContext(ctx).V(2).Info("Removed the containers whose start failed in the stopped sandbox; they never ran", "containerIDs", ids)
	out := *st
	out.Containers = nil
	for _, c := range st.Containers {
		if !gone[c.ID] {
			out.Containers = append(out.Containers, c)
		}
	}
	return &out
}

// computeSync is what a sync of pod does: the actions (with unhealthy
// containers killed and starts held for startup) and the in-place resize.
func (m *Manager) computeSync(pod *v1.Pod, st *PodStatus, opts SyncOptions) (PodActions, ResizePlan) {
	a := ComputePodActions(pod, st, m.clock.Now(), m.backoff)
	cur := SinceRestartAll(pod, st) // without what a RestartAllContainers reset left behind
	a = KillUnhealthy(pod, cur, a, opts.Unhealthy, m.clock.Now(), m.backoff)
	a = HoldForStartup(pod, cur, a, opts.NotStarted)
	var plan ResizePlan
	if m.act != nil {
		plan = ComputeResize(pod, cur, m.actuatedOf(pod), &a)
		podLevel, _ := m.actuatedPodLevel(pod)
		plan.PodLevel = PodLevelResize(pod, cur, &a, podLevel)
		plan.Pod = plan.Pod || plan.PodLevel
	}
	return a, plan
}

// Settled tells whether a sync of pod at runtime status st with opts
// would take no step: nothing to kill, start or resize, no container
// held back, no init container failed (its status read back after a sync
// that acted: the sync's work is done).
func (m *Manager) Settled(pod *v1.Pod, st *PodStatus, opts SyncOptions) bool {
	a, plan := m.computeSync(pod, st, opts)
	return a.Empty() && len(a.BackOff) == 0 && a.InitFailed == "" && plan.Empty()
}

// sandboxOptions completes the sandbox options of opts for pod in cgroup
// parent — its runtime handler and user namespace, also handed to the
// containers' options — or records kubelet's FailedCreatePodSandBox in r
// (ok false) when the sandbox config cannot be made.
func (m *Manager) sandboxOptions(ctx context.Context, pod *v1.Pod, parent string, opts *SyncOptions, r *SyncResult) (podconfig.SandboxOptions, string, bool) {
	sbOpts := opts.Sandbox
	sbOpts.CgroupParent, sbOpts.PodLogsDir = parent, m.logs
	handler, err := m.podHandler(pod)
	if err == nil {
		sbOpts.UserNamespace, err = m.podUserNamespace(ctx, pod, handler)
	}
	if err != nil {
		r.step(ActionCreatePodSandbox, string(pod.UID), err, "")
		r.warn(EventFailedCreateSandbox, fmt.Sprintf("Failed to create pod sandbox: %v", err))
		return sbOpts, "", false
	}
	opts.Container.UserNamespace = sbOpts.UserNamespace
	sbOpts.ExclusiveCPUs = PodHasExclusiveCPUs(m.cpus, pod)
	opts.Container.ThermalThrottlePaths = m.thermal
	return sbOpts, handler, true
}

// startAll starts the init containers of a in order, then its app and
// ephemeral containers; a container that mounts an image volume whose
// pull failed is not started (the pull's Waiting state).
func (m *Manager) startAll(ctx context.Context, pod *v1.Pod, st *PodStatus, a PodActions, sandboxID string,
	sbCfg *runtimeapi.PodSandboxConfig, podIPs []string, base podconfig.ContainerOptions, ivs imageVolumes, r *SyncResult) *SyncResult {
	start := func(c *v1.Container) bool {
		if w, err := ivs.startable(c, r); err != nil {
			r.mu.Lock()
			if w != nil {
				r.Waiting[c.Name] = *w
			}
			r.mu.Unlock()
			reason := ""
			if w != nil {
				reason = w.Reason
			}
			r.step(ActionStartContainer, c.Name, err, reason)
			return false
		}
		return m.startRecorded(ctx, pod, c, st, sandboxID, sbCfg, podIPs, base, r)
	}
	for _, i := range a.InitContainersToStart {
		if !start(&pod.Spec.InitContainers[i]) {
			return r // init containers run in order
		}
	}
	for _, i := range a.ContainersToStart {
		start(&pod.Spec.Containers[i])
	}
	for _, i := range a.EphemeralContainersToStart {
		ec := &pod.Spec.EphemeralContainers[i]
		if _, err := ivs.startable((*v1.Container)(&ec.EphemeralContainerCommon), r); err != nil {
			r.step(ActionStartContainer, ec.Name, err, "")
			continue
		}
		m.startEphemeral(ctx, pod, ec, st, sandboxID, sbCfg, podIPs, base, r)
	}
	return r
}

// resetFailed tells whether the kill of a container stopped by a
// RestartAllContainers reset failed in r.
func resetFailed(a PodActions, r *SyncResult) bool {
	for id, k := range a.ContainersToKill {
		if k.Reason != KillReasonRestartAll {
			continue
		}
		for _, s := range r.Steps {
			if s.Action == ActionKillContainer && s.Target == k.Name+" "+id && s.Err != nil {
				return true
			}
		}
	}
	return false
}

// runSandbox creates pod's sandbox with sbOpts, once the network is ready
// (unless the pod uses the host's), and records the step in r; ok is
// false when it failed.
func (m *Manager) runSandbox(ctx context.Context, pod *v1.Pod, sbOpts podconfig.SandboxOptions, handler string, r *SyncResult) (id string, ok bool) {
	if !pod.Spec.HostNetwork {
		if err := m.networkReady(ctx); err != nil {
			r.warn(EventNetworkNotReady, fmt.Sprintf("%v: %v", ErrNetworkNotReady, err))
			r.step(ActionCreatePodSandbox, string(pod.UID), fmt.Errorf("%w: %w", ErrNetworkNotReady, err), "")
			return "", false
		}
	}
	sbCfg, err := podconfig.SandboxConfig(pod, sbOpts)
	if err == nil {
		err = os.MkdirAll(sbCfg.LogDirectory, 0o755)
	}
	var sandboxID string
	if err == nil {
		sandboxID, err = m.rs.RunPodSandbox(ctx, sbCfg, handler)
	}
	if err != nil {
		// No sandbox id: the step names the pod, not "".
		r.step(ActionCreatePodSandbox, string(pod.UID), err, "")
		r.warn(EventFailedCreateSandbox, fmt.Sprintf("Failed to create pod sandbox: %v", err))
		return "", false
	}
	r.step(ActionCreatePodSandbox, sandboxID, nil, "")
	return sandboxID, true
}

// startRecorded starts c and records the step (and the Waiting state of a
// failed start) in r; false when it failed.
func (m *Manager) startRecorded(ctx context.Context, pod *v1.Pod, c *v1.Container, st *PodStatus, sandboxID string,
	sbCfg *runtimeapi.PodSandboxConfig, podIPs []string, base podconfig.ContainerOptions, r *SyncResult) bool {
	w, err := m.startContainer(ctx, pod, c, st, sandboxID, sbCfg, podIPs, base, r)
	if w != nil {
		r.mu.Lock()
		r.Waiting[c.Name] = *w
		r.mu.Unlock()
		r.step(ActionStartContainer, c.Name, err, w.Reason)
	} else {
		r.step(ActionStartContainer, c.Name, err, "")
	}
	return err == nil
}

// startEphemeral starts an ephemeral container, in the process namespace
// of its target container when it names one (kubelet's RunContainerError
// when the target never ran).
func (m *Manager) startEphemeral(ctx context.Context, pod *v1.Pod, ec *v1.EphemeralContainer, st *PodStatus, sandboxID string,
	sbCfg *runtimeapi.PodSandboxConfig, podIPs []string, base podconfig.ContainerOptions, r *SyncResult) bool {
	c := (*v1.Container)(&ec.EphemeralContainerCommon)
	if t := ec.TargetContainerName; t != "" {
		r.mu.Lock()
		id := r.Started[t]
		r.mu.Unlock()
		if tc := st.FindContainer(t); id == "" && tc != nil {
			id = tc.ID
		}
		if id == "" {
			err := fmt.Errorf("unable to find target container %s", t)
			r.mu.Lock()
			r.Waiting[c.Name] = Waiting{Reason: ReasonRunContainer, Message: err.Error()}
			r.mu.Unlock()
			r.step(ActionStartContainer, c.Name, err, ReasonRunContainer)
			return false
		}
		base.TargetContainerID = id
	}
	return m.startRecorded(ctx, pod, c, st, sandboxID, sbCfg, podIPs, base, r)
}

// writeEtcHosts writes the pod's managed hosts file (podconfig.EtcHosts) into its
// directory and returns its path.
func (m *Manager) writeEtcHosts(pod *v1.Pod, podIPs []string, clusterDomain string) (string, error) {
	var node []byte
	if pod.Spec.HostNetwork {
		var err error
		if node, err = os.ReadFile(m.hosts); err != nil {
			return "", err
		}
	}
	content, err := podconfig.EtcHosts(pod, podIPs, clusterDomain, node)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(m.pods, string(pod.UID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	// Atomic (temp file, fsync, rename): a full disk or a crash leaves the
	// previous file or none, never a truncated one that a container
	// mounts.
	path := filepath.Join(dir, podconfig.EtcHostsFile)
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, content) {
		return path, nil // written by an earlier sync: no rewrite, no fsync
	}
	if err := maybe.WriteFile(path, content, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, os.Chmod(path, 0o644)
}

// supplementalGroupsSource is a PodVolumes that also gives the groups of
// its volumes' PV gid annotations (volumemanager.PodVolumes).
type supplementalGroupsSource interface {
	ExtraSupplementalGroups(pod *v1.Pod) []int64
}

// EventFailedMount is the warning of a volume that could not be set up.
const EventFailedMount = "FailedMount"

// setUpVolumes sets up pod's volumes into opts.Container.VolumeHostPaths,
// recording a FailedMount warning per volume that failed (or the reason
// of an error with an EventReason method); false when one did.
func (m *Manager) setUpVolumes(ctx context.Context, pod *v1.Pod, opts *SyncOptions, r *SyncResult) bool {
	if m.vols == nil {
		return true
	}
	paths, err := m.vols.SetUp(ctx, pod)
	merged := make(map[string]string, len(paths)+len(opts.Container.VolumeHostPaths))
	for k, v := range opts.Container.VolumeHostPaths {
		merged[k] = v
	}
	for k, v := range paths {
		merged[k] = v
	}
	opts.Container.VolumeHostPaths = merged
	if g, ok := m.vols.(supplementalGroupsSource); ok {
		opts.Container.ExtraSupplementalGroups = g.ExtraSupplementalGroups(pod)
	}
	r.step(ActionSetUpVolumes, string(pod.UID), err, "")
	if err == nil {
		return true
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		reason := EventFailedMount
		var own interface{ EventReason() string }
		if errors.As(e, &own) {
			reason = own.EventReason() // e.g. kubelet's VolumeAttachmentLimitExceeded rejection
		}
		r.warn(reason, e.Error())
	}
	return false
}

// startContainer pulls, creates and starts c, and runs its postStart hook.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, st *PodStatus, sandboxID string,
	sbCfg *runtimeapi.PodSandboxConfig, podIPs []string, base podconfig.ContainerOptions, r *SyncResult) (*Waiting, error) {
	restartCount := nextRestartCount(st, c.Name) // counts go on across a RestartAllContainers reset
	if prev := newestExited(SinceRestartAll(pod, st), c.Name); prev != nil {
		// A restart (after an exit, or a kill by a failed probe): the next
		// exit waits longer, whether this start succeeds or not (kubelet's).
		m.backoff.Restarted(ContainerBackoffKey(pod, c), prev.FinishedAt)
	}
	img, w, err := m.ensureImage(ctx, pod, c, sbCfg, r)
	if err != nil {
		return w, err
	}
	opts := base
	opts.RestartCount, opts.ImageRef, opts.ImageUID, opts.ImageUsername = restartCount, img.ref, img.uid, img.username
	opts.RestartAllEpoch, _ = RestartAllEpoch(pod, st)
	opts.PodIPs = podIPs
	m.cpusOf(pod, c.Name, &opts)
	if m.svcs != nil {
		svcs, err := m.svcs()
		if err != nil {
			return &Waiting{Reason: ReasonCreateContainerConfig, Message: err.Error()}, err
		}
		links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
		opts.ServiceEnv = podconfig.ServiceEnv(svcs, pod.Namespace, links)
	}
	if m.objs != nil {
		ns := pod.Namespace
		opts.ConfigMap = func(name string) (*v1.ConfigMap, error) { return m.objs.ConfigMap(ctx, ns, name) }
		opts.Secret = func(name string) (*v1.Secret, error) { return m.objs.Secret(ctx, ns, name) }
	}
	opts.Warn = func(reason, msg string) { r.warnFor(c.Name, reason, msg) }
	if m.vols != nil {
		opts.SubPath = func(req podconfig.SubPathRequest) (string, error) { return m.vols.SubPath(ctx, pod, req) }
	}
	opts.VolumeFile = volumeFile(opts.VolumeHostPaths)
	termDir := filepath.Join(m.pods, string(pod.UID), "containers", c.Name)
	termFile := filepath.Join(termDir, fmt.Sprintf("%d", restartCount))
	if err := os.MkdirAll(termDir, 0o755); err != nil {
		return &Waiting{Reason: ReasonCreateContainerConfig, Message: err.Error()}, err
	}
	// 0666 whatever the umask, as kubelet: a container running as any
	// user writes its termination message there.
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return &Waiting{Reason: ReasonCreateContainerConfig, Message: err.Error()}, err
	}
	if err := os.Chmod(termFile, 0o666); err != nil {
		return &Waiting{Reason: ReasonCreateContainerConfig, Message: err.Error()}, err
	}
	opts.TerminationMessageHostPath = termFile
	if opts.Devices, err = m.containerDevices(ctx, pod, c); err != nil {
		r.warnFor(c.Name, EventFailed, "Error: "+err.Error())
		return &Waiting{Reason: ReasonCreateContainerConfig, Message: err.Error()}, err
	}
	cfg, err := podconfig.ContainerConfig(pod, c, opts)
	if err != nil {
		r.warnFor(c.Name, EventFailed, "Error: "+err.Error())
		return &Waiting{Reason: ReasonCreateContainerConfig, Message: err.Error()}, err
	}
	if err := os.MkdirAll(filepath.Join(sbCfg.LogDirectory, c.Name), 0o755); err != nil {
		return &Waiting{Reason: ReasonCreateContainer, Message: err.Error()}, err
	}
	id, err := m.rs.CreateContainer(ctx, sandboxID, cfg, sbCfg)
	if err != nil {
		r.warnFor(c.Name, EventFailed, "Error: "+err.Error())
		return &Waiting{Reason: ReasonCreateContainer, Message: err.Error()}, err
	}
	r.normalFor(c.Name, EventCreated, "Created container: "+c.Name)
	if err := m.rs.StartContainer(ctx, id); err != nil {
		r.warnFor(c.Name, EventFailed, "Error: "+err.Error())
		return &Waiting{Reason: ReasonRunContainer, Message: err.Error()}, err
	}
	r.normalFor(c.Name, EventStarted, "Started container "+c.Name)
	m.recordActuated(ctx, pod, c)
	r.mu.Lock()
	r.Started[c.Name] = id
	r.mu.Unlock()
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		host := "127.0.0.1"
		if len(podIPs) > 0 {
			host = podIPs[0]
		}
		if msg, err := m.runHook(ctx, pod, id, c, c.Lifecycle.PostStart, host, 0, func(reason, msg string) { r.warnFor(c.Name, reason, msg) }); err != nil {
			// As kubelet: the event does not carry the message (it may
			// hold secrets); the container's waiting state does.
			r.warnFor(c.Name, EventFailedPostStartHook, "PostStartHook failed")
			cs := &ContainerStatus{ID: id, Name: c.Name, State: ContainerRunning}
			m.killContainers(ctx, pod, map[string]KillInfo{id: {Name: c.Name, Reason: EventFailedPostStartHook,
				Message: "FailedPostStartHook", Container: cs}}, nil, nil, r)
			return &Waiting{Reason: ReasonPostStartHookError, Message: msg}, fmt.Errorf("%w: %s", ErrPostStartHook, msg)
		}
	}
	return nil, nil
}

// networkReady asks the runtime whether the pod network is ready; when
// the Status call fails the last answer stands (none yet: ready, and
// RunPodSandbox will tell).
func (m *Manager) networkReady(ctx context.Context) error {
	resp, err := m.rs.Status(ctx, false)
	m.netMu.Lock()
	defer m.netMu.Unlock()
	if err != nil {
		klog.FromContext(ctx).V(4).Info("runtime status before a pod-network sandbox", "err", err)
		return m.netErr
	}
	m.netErr = NetworkReady(resp.GetStatus())
	return m.netErr
}
