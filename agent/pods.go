package agent

import (
	"context"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/allocation"
	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/cpumanager"
	"github.com/kernelet/kernelet/agent/crimetrics"
	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/dra"
	"github.com/kernelet/kernelet/agent/gc"
	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/memorymanager"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/agent/oomwatch"
	"github.com/kernelet/kernelet/agent/pleg"
	"github.com/kernelet/kernelet/agent/podsetup"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/pressure"
	"github.com/kernelet/kernelet/agent/prober"
	"github.com/kernelet/kernelet/agent/qoscgroups"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/agent/sources"
	"github.com/kernelet/kernelet/agent/syncloop"
	"github.com/kernelet/kernelet/agent/userns"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/agent/volumemanager"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/grace"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/status/events"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

// runtimeServicer is a Runtime that exposes its CRI runtime service:
// runtime.Runtime does; without it the agent runs no pods.
type runtimeServicer interface {
	Service() internalapi.RuntimeService
}

// pods is the pod side of a running agent: sources → workers → runtime,
// with the PLEG feeding the workers.
type pods struct {
	mgr     *runtime.Manager
	pleg    *pleg.PLEG
	workers *podworkers.Workers
	sources *sources.Sources
	syncOpt runtime.SyncOptions
	hostIPs []string
	now     func() time.Time
	// oomScores tracks the oom_score_adj each running container got.
	oomScores   *runtime.OOMScores
	memCapacity int64
	// allocatableMemory is the node's allocatable memory (huge pages left
	// out) and evictionHugePages the huge page capacity memory.available
	// leaves out (podsetup.Setup).
	allocatableMemory, evictionHugePages int64
	// recorder records pod events; status (nil: standalone) writes pod
	// statuses and mirror pods to the API server.
	recorder record.EventRecorder
	status   *statuspods.Manager
	// vols sets up and tears down the in-tree pod volumes, csiVols the
	// CSI ones (nil in runonce mode).
	vols    *volume.Manager
	csiVols *volumemanager.Manager
	// volumeStatsPeriod is how long the CSI volumes' stats are served
	// before their drivers are asked again (volumeStatsAggPeriod).
	volumeStatsPeriod time.Duration
	// volumeHealth: the CSIVolumeHealth gate; the drivers are asked for
	// the volumes' health every volumeStatsPeriod (status.volumeHealth).
	volumeHealth bool
	// cpus and mem are the CPU and memory managers
	// (agent/resourcemanagers.go).
	cpus *cpumanager.Manager
	mem  *memorymanager.Manager
	// images is the CRI image service.
	images internalapi.ImageManagerService
	// containerGC and imageGC collect dead containers and unused images.
	containerGC *gc.ContainerGC
	imageGC     *gc.ImageGC
	// cgroups is the node's cgroup manager (pod and QoS cgroups).
	cgroups *cgroups.Manager
	// userns hands out the user namespaces of hostUsers: false pods.
	userns *userns.Manager

	// evictions is the eviction manager (set before the first pod is
	// admitted); pressure owns it with the stats it decides on, the pods'
	// local storage and the kernel notifications that wake it.
	evictions *eviction.Manager
	pressure  *pressure.Signals

	// deadlines tracks activeDeadlineSeconds.
	deadlines *runtime.Deadlines

	// probes runs the containers' probes (agent/podhooks.go).
	probes *prober.Manager

	// hub gets the live events (evictions, OOM kills) for the dashboard;
	// ooms finds the OOM kills in pod statuses (agent/liveview.go).
	hub  *live.Hub
	ooms *live.OOMTracker
	// kernelOOMs: the kernel's OOM kill stream runs (agent/oomwatch)
	// and publishes the kills to hub itself; the OOMKilled terminations of
	// pod statuses are then not published again.
	kernelOOMs atomic.Bool

	// alloc allocates in-place resizes; actuated records what each
	// running container was given (agent/resizes.go).
	alloc         *allocation.Manager
	actuated      *allocation.Store
	resizeMetrics *allocation.Metrics
	// qos keeps the QoS cgroups sized for the pods.
	qos *qoscgroups.Updater
	// devices is the device plugin manager (agent/devices.go); claims
	// the DRA manager (agent/nodeplugins.go).
	devices *devicemanager.Manager
	claims  *dra.Manager

	mu      sync.Mutex
	waiting map[types.UID]map[string]runtime.Waiting
	// gate holds each pod's runtime status as its last sync that left
	// nothing to do read it: a lifecycle event that finds the pod still
	// so wakes no worker.
	gate   *pleg.Gate
	reaper *runtime.Reaper
}

// podEnv is what the pod side is built on: the cgroup hierarchies, the
// CRI services (counted in kubelet_runtime_operations_*), the node's
// share for pods and the extra pod sources.
type podEnv struct {
	h       *cgroups.Hierarchies
	rs      internalapi.RuntimeService
	is      internalapi.ImageManagerService
	setup   podsetup.Setup
	podsDir string
	sources []sources.Source
	// allocated is the allocation checkpoint (agent/resizes.go).
	allocated *allocation.Store
}

// newPods builds the runtime half of the pod side: cgroups and QoS
// hierarchy, node addresses, image service, volumes, runtime manager and
// PLEG. It fails when the node cannot run pods at all (no cgroups, no
// image service).
func (a *Agent) newPods(ctx context.Context, rs internalapi.RuntimeService) (*pods, podEnv, error) {
	log := klog.FromContext(ctx)
	kc := &a.opts.Config.Kubelet
	var env podEnv
	h, err := a.deps.Cgroups()
	if err != nil {
		return nil, env, fmt.Errorf("cgroups: %w", err)
	}
	driver, err := a.cgroupDriver(ctx, rs)
	if err != nil {
		return nil, env, err
	}
	cm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: kc.CgroupRoot, Driver: driver,
		MemoryQoS: config.FeatureEnabled(kc, "MemoryQoS"), Observe: a.metrics.cgroups.Observe})
	if err != nil {
		return nil, env, fmt.Errorf("cgroups (driver %s): %w", driver, err)
	}
	built := false
	defer func() {
		if !built {
			_ = cm.Close()
		}
	}()
	nodeIPs, from := nodeip.Detect(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
	if from == "fallback" {
		log.Info("Warning: no node address found (no --node-ip, the hostname resolves to no address of this host, no default route); pods see 127.0.0.1 as their host IP", "hostname", a.opts.NodeName)
	} else {
		log.Info("Node addresses", "ips", nodeIPs, "from", from)
	}
	setup := podsetup.New(a.opts.Config, podsetup.NodeCapacity(ctx, h), h.Mode, nodeIPs, a.opts.RootDir)
	if ok, why := cm.MemoryQoS(); !ok && setup.Sync.Container.MemoryQoS.Enforce {
		// cgroup v2 but a kernel older than 5.9: containers get what
		// the pod cgroups get, no Memory QoS.
		log.Info("Memory QoS is not enforced", "reason", why)
		setup.Sync.Container.MemoryQoS.Enforce = false
	}
	if _, err := cm.EnsureQoS(ctx, setup.QoS, nil); err != nil {
		return nil, env, fmt.Errorf("qos cgroups under %s: %w", kc.CgroupRoot, err)
	}
	// Containers' swap is limited (NoSwap: none; LimitedSwap: kubelet's
	// share) where the memory controller accounts swap.
	setup.Sync.Container.Swap.Controller = cm.SwapAccounting()
	is, err := a.deps.ConnectImages(ctx, kc.ContainerRuntimeEndpoint, kc.RuntimeRequestTimeout.Duration)
	if err != nil {
		return nil, env, fmt.Errorf("image service: %w", err)
	}
	rs, is = crimetrics.Wrap(rs, is, a.metrics.cri) // kubelet_runtime_operations_*
	env = podEnv{h: h, rs: rs, is: is, setup: setup, podsDir: filepath.Join(a.opts.RootDir, "pods")}
	vols, objs, err := a.newVolumeManager(env.podsDir, setup.Sync.Container.NodeAllocatable)
	if err != nil {
		return nil, env, err
	}
	reader, err := cgroups.NewReader(h)
	if err != nil {
		return nil, env, fmt.Errorf("cgroups: %w", err)
	}
	allocated, actuated := openAllocationStores(ctx, a.opts.RootDir)
	uns, err := a.newUserNamespaces(ctx, env.podsDir)
	if err != nil {
		return nil, env, err
	}
	env.allocated = allocated
	services, runtimeClasses := a.clusterLookups()
	p := &pods{} // filled below; the CPU manager asks it for the active pods
	cpus, mem, dm, err := a.newResourceManagers(ctx, p, rs, setup)
	if err != nil {
		return nil, env, err
	}
	csiVols, claims := a.podPlugins()
	mcfg := runtime.ManagerConfig{Runtime: rs, Images: is, CPUs: cpumanager.Pinning{CPUs: cpus, Memory: mem}, Devices: dm.ContainerDevices, Claims: claims,
		Cgroups: runtime.CgroupsAdapter{Manager: cm, Config: setup.QoS, Reader: reader, CPUs: cpumanager.Pinning{CPUs: cpus, Memory: mem}}, Actuated: actuated,
		PodLogsDir: kc.PodLogsDir, PodsDir: env.podsDir, Volumes: a.podVolumes(vols), Objects: objs, Services: services,
		RuntimeClasses: runtimeClasses, ParallelPulls: config.ParallelImagePulls(kc),
		PullQPS: float32(*kc.RegistryPullQPS), PullBurst: int(kc.RegistryBurst),
		UserNamespaces: uns, ThermalThrottlePaths: runtime.NodeThermalThrottlePaths()}
	mcfg.CrashLoopInitial, mcfg.CrashLoopMax = runtime.CrashLoopBackOffDelays(config.CrashLoopBackOff(kc))
	mgr, err := runtime.NewManager(mcfg)
	if err != nil {
		return nil, env, err
	}
	pl, err := pleg.New(pleg.Config{Lister: mgr, Streamer: rs, Period: a.deps.PLEGPeriod,
		Evented:   a.opts.Config.Kernelet.PLEGMode == config.PLEGEvented,
		Threshold: a.deps.PLEGThreshold, Metrics: a.metrics.pleg})
	if err != nil {
		return nil, env, err
	}
	*p = pods{mgr: mgr, pleg: pl, cpus: cpus, mem: mem, now: a.deps.Now, hostIPs: nodeIPs, vols: vols, csiVols: csiVols, claims: claims,
		waiting: map[types.UID]map[string]runtime.Waiting{}, gate: pleg.NewGate(pl.Cache().Get), deadlines: runtime.NewDeadlines(),
		oomScores: a.metrics.oomScores, memCapacity: setup.Capacity.MemoryBytes, recorder: a.recorder, images: is,
		allocatableMemory: setup.Allocatable.MemoryBytes, evictionHugePages: setup.EvictionHugePages, cgroups: cm, actuated: actuated, userns: uns, volumeStatsPeriod: kc.VolumeStatsAggPeriod.Duration,
		volumeHealth: config.FeatureEnabled(kc, "CSIVolumeHealth"), devices: dm, hub: a.dash.Hub, ooms: a.dash.OOMs,
		qos: qoscgroups.New(qoscgroups.Config{Cgroups: cm, QoS: setup.QoS, Pods: p.admittedPods, Allocated: p.allocated, PodGeneration: p.allocGeneration})}
	p.reaper = runtime.NewReaper(mgr, func(uid types.UID) bool { return p.workers.Known(uid) })
	if a.cluster != nil {
		p.status = a.cluster.PodStatus()
		env.sources = append(env.sources, a.cluster.PodSource())
	}
	built = true
	return p, env, nil
}

// clusterLookups are the services and RuntimeClasses of the API server
// (nil in standalone mode).
func (a *Agent) clusterLookups() (func() ([]*v1.Service, error), podconfig.RuntimeClassGetter) {
	if a.cluster == nil {
		return nil, nil
	}
	return a.cluster.Services, a.cluster.RuntimeClass
}

// cgroupDriver is the cgroup driver the pod side runs with: the runtime's
// (CRI RuntimeConfig) or, when it reports none, the configured one
// (podsetup.CgroupDriver); a runtime whose driver differs from a
// cgroupDriver the configuration sets is an error naming both.
func (a *Agent) cgroupDriver(ctx context.Context, rs internalapi.RuntimeService) (cgroups.Driver, error) {
	kc := &a.opts.Config.Kubelet
	reported, err := runtime.ReportedCgroupDriver(ctx, rs)
	if err != nil {
		return "", fmt.Errorf("cgroup driver: %w", err)
	}
	driver, err := podsetup.CgroupDriver(kc.CgroupDriver, a.opts.Config.CgroupDriverSet, reported)
	if err != nil {
		return "", err
	}
	if reported == "" {
		klog.FromContext(ctx).Info("The container runtime reports no cgroup driver (no CRI RuntimeConfig); using cgroupDriver from the configuration", "cgroupDriver", driver)
	} else {
		klog.FromContext(ctx).Info("Using the cgroup driver the container runtime reports", "cgroupDriver", driver)
	}
	return driver, nil
}

// startPods builds and runs the pod side until ctx is done. It fails when
// the node cannot run pods at all (no cgroups, no image service).
func (a *Agent) startPods(ctx context.Context, rs internalapi.RuntimeService) error {
	log := klog.FromContext(ctx)
	kc := &a.opts.Config.Kubelet
	p, env, err := a.newPods(ctx, rs)
	if err != nil {
		return err
	}
	defer p.cgroups.Close() // the cgroups stay
	rs, alloc := env.rs, env.setup.Allocatable
	if p.pressure, err = a.newPressure(p, env.h, alloc.MemoryBytes, env.setup.QoS, rs); err != nil {
		return err
	}
	p.evictions = p.pressure.Manager()
	topology, err := a.newTopologyManager(p.devices, p.cpus, p.mem)
	if err != nil {
		return err
	}
	admit, err := a.admitHandlers(ctx, alloc, podworkers.AdmitFunc(topology.Admit), p.devices)
	if err != nil {
		return err
	}
	admit = append([]podworkers.AdmitHandler{p.pressure.Admit(a.opts.Config.Kernelet.PSINodeCondition)}, admit...)
	admit = append(admit, podworkers.Validate(runtime.ImageVolumesMountable(ctx, rs)))
	// A pod a later handler rejects gives back the devices it was just
	// allocated.
	admit = []podworkers.AdmitHandler{p.devices.ReleaseOnReject(admit)}
	p.resizeMetrics = a.metrics.resize
	p.newAllocation(env.allocated, admit, a.metrics.resize, config.FeatureEnabled(kc, "InPlacePodLevelResourcesVerticalScaling"))
	if err := p.startProbes(rs, a.metrics.probes); err != nil {
		return err
	}
	defer p.probes.Stop()
	p.syncOpt = env.setup.Sync
	podMetrics := a.metrics.workers // kubelet_pod_worker_duration_seconds, kubelet_pod_start*_duration_seconds
	p.workers, err = podworkers.New(podworkers.Config{Syncer: podMetrics.Timed(p), SyncFrequency: kc.SyncFrequency.Duration,
		Admit: admit, Allocation: p.alloc,
		OnTerminated: func(pod *v1.Pod) {
			p.forget(pod.UID)
			if err := p.userns.Release(pod.UID); err != nil { // kubelet's: once the pod terminated
				log.Error(err, "Releasing the pod's user namespace", "pod", klog.KObj(pod))
			}
			p.forgetAllocation(ctx, pod)
			p.releaseDevices(pod.UID)
			p.cpus.PodsChanged()
			go p.qos.Update(ctx) // not under the workers' lock
			podMetrics.Forget(pod.UID)
			if p.status != nil {
				p.status.Terminated(pod)
			}
		},
		OnStatus: func(pod *v1.Pod, st v1.PodStatus) {
			p.observeOOMKills(pod, st)
			if podutil.IsTerminal(st.Phase) {
				p.alloc.RetrySoon(ctx, "pod_terminated")
			}
			if p.status != nil {
				p.status.SetStatus(pod, st)
			}
		}})
	if err != nil {
		return err
	}
	// The first relist happens before the pods are published (a.pods):
	// the pleg health check goes from "no pod lifecycle yet" (ok) to a
	// PLEG that has relisted, never through "pleg has yet to be
	// successful" in between, and the first syncs find the cache filled.
	if n, ok := p.pleg.Relist(ctx); ok {
		log.Info("Pods found in the runtime at start", "count", n)
	}
	p.sources, err = sources.Start(ctx, sources.OptionsFromKubelet(kc, a.opts.NodeName), env.sources...)
	if err != nil {
		return fmt.Errorf("pod sources: %w", err)
	}
	if err := a.newCollectors(p, rs, env.is); err != nil {
		return err
	}
	if err := a.startStats(p, env.h); err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	a.mu.Lock()
	a.pods = p
	a.mu.Unlock()
	log.Info("Running pods", "cgroupRoot", kc.CgroupRoot, "podLogsDir", kc.PodLogsDir, "podsDir", env.podsDir,
		"allocatableMilliCPU", alloc.MilliCPU, "allocatableMemory", alloc.MemoryBytes, "maxPods", kc.MaxPods)
	return a.runPods(ctx, p, rs)
}

// runPods runs the built pod side until ctx is done and its sources
// close: relist, workers, housekeeping, volumes, the eviction manager
// with the kernel signals that wake it, the OOM kill stream and the
// collectors.
func (a *Agent) runPods(ctx context.Context, p *pods, rs internalapi.RuntimeService) error {
	var wg sync.WaitGroup
	wg.Go(func() { p.pleg.Run(ctx) })
	wg.Go(func() { p.cpus.Run(ctx) })
	wg.Go(func() { p.dispatchEvents(ctx) })
	passed := a.loops.Periodic("housekeeping")
	wg.Go(func() { p.cleanupOrphans(ctx, a.deps.HousekeepingPeriod, passed) })
	wg.Go(func() { p.vols.Run(ctx, 0) })
	if p.volumeHealth && p.csiVols != nil {
		wg.Go(func() { p.csiVols.RunHealth(ctx, p.volumeStatsPeriod, p.workers.Wake) })
	}
	wg.Go(func() { p.pressure.Run(ctx) }) // the eviction manager; throttled pods restored at the end
	wg.Go(func() { p.alloc.Run(ctx) })
	wg.Go(func() { a.servePodResources(ctx, p) })
	wg.Go(func() { p.claims.Run(ctx, p.workerPods, p.sources.SeenAllSources) })
	wg.Go(func() { p.dispatchDeviceHealth(ctx) })
	p.pressure.Watch(ctx, &wg)
	a.startOOMWatch(ctx, p, rs)
	oomwatch.ReleaseStartupMemory()
	wg.Go(func() { p.containerGC.Run(ctx, a.opts.ContainerGCPeriod) })
	wg.Go(func() { p.imageGC.Run(ctx, a.opts.ImageGCPeriod) })
	p.dispatchUpdates(ctx, a.loops)
	wg.Wait()
	p.workers.Wait()
	p.devices.Wait()
	return p.sources.Close()
}

// dispatchUpdates hands source updates to the workers until the sources
// close, busy for the syncloop check while it hands one.
func (p *pods) dispatchUpdates(ctx context.Context, loops *syncloop.Monitor) {
	for u := range p.sources.Updates() {
		done := loops.Busy("pod update dispatch")
		for _, pod := range u.Pods {
			switch {
			case u.Op == sources.OpRemove:
				p.workers.Update(ctx, podworkers.Update{Type: podworkers.TerminatePod, Pod: pod, Removed: true})
			case u.Op == sources.OpDelete || pod.DeletionTimestamp != nil:
				// Deleted gracefully in the API server: stop it within the
				// grace the API server gave.
				p.workers.Update(ctx, podworkers.Update{Type: podworkers.TerminatePod, Pod: pod,
					GracePeriod: pod.DeletionGracePeriodSeconds})
			case u.Op == sources.OpReconcile:
				p.workers.Reconcile(ctx, pod)
			default:
				p.workers.Update(ctx, podworkers.Update{Type: podworkers.SyncPod, Pod: pod})
			}
		}
		switch {
		case p.status == nil:
		case u.Source == sources.SourceAPI:
			// The static pods are unchanged: no copy of every source's
			// pods per API update (O(n) each). The writer still looks
			// again (an API pod's readiness gates may have changed).
			p.status.Wake()
		default:
			p.status.SetStaticPods(staticPods(p.sources.Pods()))
		}
		done()
	}
}

// staticPods are the pods of the file and URL sources.
func staticPods(all []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range all {
		if podutil.IsStatic(p) {
			out = append(out, p)
		}
	}
	return out
}

// recordEvents records a sync's or kill's events on the pod (or its
// container).
func (p *pods) recordEvents(pod *v1.Pod, evs []runtime.Event) {
	for _, e := range evs {
		p.recorder.Event(events.PodRef(pod, e.Container), e.Type, e.Reason, e.Message)
	}
}

// dispatchEvents wakes the worker of each pod with a lifecycle event
// that may ask for a sync (pleg.Gate).
func (p *pods) dispatchEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-p.pleg.Events():
			if p.gate.Event(e.UID) {
				p.workers.Wake(e.UID)
			}
		}
	}
}

// cleanupOrphans runs housekeeping every period (2 s when not set), each
// pass period after the previous one ended (then passed), until ctx ends.
func (p *pods) cleanupOrphans(ctx context.Context, period time.Duration, passed func()) {
	if period <= 0 {
		period = 2 * time.Second
	}
	_ = wait.Backoff{Duration: period}.DelayFunc().Until(ctx, false, true, func(ctx context.Context) (bool, error) {
		p.housekeeping(ctx)
		passed()
		return false, nil
	})
}

// housekeeping collects expired back-off entries (as kubelet's) and,
// once every source has delivered its pods, releases what pods no source
// wants held (volumes, allocations, user namespaces) and reaps the pods
// the runtime holds that no source wants nor a worker runs (removed while
// the agent was down) and the leftovers of interrupted kills.
func (p *pods) housekeeping(ctx context.Context) {
	p.mgr.Backoff().GC()
	p.qos.Update(ctx) // rewritten once a minute
	if !p.sources.SeenAllSources() {
		return
	}
	listed, ok := p.pleg.Listed() // the relist's view, at most two periods old
	if !ok {
		var err error
		if listed, err = p.mgr.ListPods(ctx); err != nil {
			return
		}
	}
	wanted := p.sources.UIDs()
	p.cleanupVolumes(ctx, wanted, listed)
	p.cleanupAllocations(ctx, wanted)
	p.cleanupUserNamespaces(ctx, wanted, listed)
	p.reaper.Reap(ctx, listed, wanted)
}

func (p *pods) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.waiting, uid)
	p.mu.Unlock()
	p.gate.Forget(uid)
	p.pleg.Forget(uid) // its relist view too: the housekeeping reaps no pod its worker removed
	p.oomScores.Forget(uid)
	p.deadlines.Forget(uid)
	p.probes.RemovePod(uid)
}

// retryMargin is added to a back-off expiry so that the sync it asks for
// finds the hold over.
const retryMargin = 20 * time.Millisecond

// SyncPod implements podworkers.Syncer.
func (p *pods) SyncPod(ctx context.Context, pod *v1.Pod) (podworkers.SyncResult, error) {
	p.gate.Begin(pod.UID)
	var settled *runtime.PodStatus // the status read when nothing is left to do
	readAt := p.now()
	defer func() {
		if p.gate.End(pod.UID, settled, readAt) {
			p.workers.Wake(pod.UID) // an event during the sync asks for another
		}
	}()
	pod = p.beginResize(ctx, pod) // from here on: at its allocated requirements
	p.qos.Update(ctx)             // the pod's share in its QoS cgroup before its own cgroup
	st, err := p.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return podworkers.SyncResult{}, err
	}
	since := p.now() // the pod is active from its first sandbox on (ToAPIStatus's startTime)
	if n := len(st.Sandboxes); n > 0 {
		since = st.Sandboxes[n-1].CreatedAt
	}
	exceeded, first, left := p.deadlines.Check(pod, since, p.now())
	if exceeded {
		// Past activeDeadlineSeconds: nothing more starts; the Failed
		// phase makes the worker stop the pod.
		if first {
			p.recordEvents(pod, []runtime.Event{{Type: v1.EventTypeNormal, Reason: runtime.ReasonDeadlineExceeded, Message: runtime.MessageDeadlineExceeded}})
		}
		p.mu.Lock()
		waiting := p.waiting[pod.UID]
		p.mu.Unlock()
		out := runtime.ToAPIStatus(pod, st, p.now(), p.statusInputs(pod, waiting))
		return podworkers.SyncResult{Status: runtime.WithFailed(out, runtime.ReasonDeadlineExceeded, runtime.MessageDeadlineExceeded, p.now())}, nil
	}
	opts := p.syncOpt
	opts.Unhealthy, opts.NotStarted = p.unhealthy(pod), p.probes.NotStarted(pod)
	r := p.mgr.SyncPod(ctx, pod, st, opts)
	p.recordEvents(pod, r.Events)
	p.mu.Lock()
	p.waiting[pod.UID] = r.Waiting
	p.mu.Unlock()
	switch {
	case r.Err() != nil:
	case !r.Acted():
		settled = st
	default: // something changed in the runtime: read it back
		at := p.now()
		if after, gerr := p.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); gerr == nil {
			st = after
			if len(r.Waiting) == 0 && p.mgr.Settled(pod, st, opts) { // its work done: the events it caused need no sync
				settled, readAt = st, at
			}
		}
	}
	p.oomScores.Observe(ctx, pod, st, p.memCapacity, p.mgr.OOMScoreApplied)
	res := podworkers.SyncResult{Status: p.endResize(pod, st, r, runtime.ToAPIStatus(pod, st, p.now(), p.statusInputs(pod, r.Waiting)))}
	p.probes.UpdatePod(pod, res.Status)
	if at := r.Actions.RetryAt; !at.IsZero() {
		res.RetryAfter = max(at.Sub(p.now()), 0) + retryMargin
	}
	if left > 0 && (res.RetryAfter == 0 || left+retryMargin < res.RetryAfter) {
		res.RetryAfter = left + retryMargin // sync when the deadline passes
	}
	if !p.pleg.EventsActive() { // a running init container's exit, sooner than the relist
		if d := runtime.NextInitCheck(pod, st, p.now(), p.pleg.Period()); d > 0 && (res.RetryAfter == 0 || d < res.RetryAfter) {
			res.RetryAfter = d
		}
	}
	if res.Status.Phase == v1.PodFailed && res.Status.Reason == volumemanager.ReasonAttachLimitExceeded {
		return res, nil // rejected by the volume manager: the worker stops it
	}
	return res, r.Err()
}

// StopPod implements podworkers.Syncer: a pod that finished stops (what
// still runs, its sandboxes, its cgroup) and keeps its exited containers
// and logs for its final status.
func (p *pods) StopPod(ctx context.Context, pod *v1.Pod) (v1.PodStatus, error) {
	p.gate.Unsettle(pod.UID)
	pod = p.allocated(pod)
	st, err := p.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return v1.PodStatus{}, err
	}
	r := p.mgr.StopPod(ctx, pod, st)
	p.recordEvents(pod, r.Events)
	if err := r.Err(); err != nil {
		return v1.PodStatus{}, err
	}
	if after, err := p.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		st = after
	}
	p.oomScores.Forget(pod.UID) // nothing of it runs any more
	p.releaseDevices(pod.UID)   // finished: its devices go back (kubelet's active pods)
	p.mu.Lock()
	waiting := p.waiting[pod.UID]
	p.mu.Unlock()
	p.probes.RemovePod(pod.UID) // nothing of it runs: no more probes
	out := runtime.ToAPIStatus(pod, st, p.now(), p.statusInputs(pod, waiting))
	if p.deadlines.IsExceeded(pod.UID) {
		out = runtime.WithFailed(out, runtime.ReasonDeadlineExceeded, runtime.MessageDeadlineExceeded, p.now())
	}
	return out, nil
}

// KillPod implements podworkers.Syncer: the pod's containers and sandboxes
// stop within the grace (and by deadline, which a shorter grace arriving
// meanwhile brings forward) and are removed, with the pod's cgroup and
// logs. The final status is read from the runtime between the stop and
// the removal (none when the runtime held nothing of the pod).
func (p *pods) KillPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64, deadline *grace.Deadline) (*v1.PodStatus, error) {
	p.gate.Unsettle(pod.UID)
	pod = p.allocated(pod)
	st, err := p.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, err
	}
	r := p.mgr.KillPodWithin(ctx, pod, st, gracePeriod, deadline)
	p.recordEvents(pod, r.Events)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Stopped == nil || len(st.Containers) == 0 && len(st.Sandboxes) == 0 {
		return nil, nil
	}
	final := runtime.TerminalStatus(pod, runtime.ToAPIStatus(pod, r.Stopped, p.now(), runtime.StatusInputs{HostIPs: p.hostIPs}))
	return &final, nil
}

// CleanupPod implements podworkers.Syncer: whatever KillPod left (a
// container that appeared meanwhile, a busy cgroup) is removed now.
func (p *pods) CleanupPod(ctx context.Context, pod *v1.Pod) error {
	st, err := p.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	zero := int64(0)
	if len(st.Containers) > 0 || len(st.Sandboxes) > 0 {
		if err := p.mgr.KillPod(ctx, pod, st, &zero).Err(); err != nil {
			return err
		}
	}
	p.oomScores.Forget(pod.UID) // nothing of it runs: no annotation, no series
	return nil
}

// PodList is what GET /pods serves.
func (p *pods) PodList() *v1.PodList {
	list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, r := range p.workers.Pods() {
		pod := r.Pod.DeepCopy()
		pod.Status = r.Status
		if v, ok := p.oomScores.Annotation(pod.UID); ok {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[runtime.AnnotationOOMScoreAdj] = v
		}
		if pod.Status.Phase == "" {
			pod.Status.Phase = v1.PodPending
		}
		list.Items = append(list.Items, *pod)
	}
	return list
}

// admitHandlers are kubelet's admission checks in kubelet's order (the
// first rejection wins): sysctls, pod-level resources with their gate off, the topology manager's alignment and
// allocation of devices, CPUs and memory (allocate: kubelet's resource
// allocation handler), the pod's OS, resources (extended ones too), node affinity,
// node name, host ports, NoExecute taints, then what the runtime cannot
// run, then the extra handlers of Deps.
func (a *Agent) admitHandlers(ctx context.Context, alloc podworkers.Allocatable, allocate podworkers.AdmitHandler, devices *devicemanager.Manager) ([]podworkers.AdmitHandler, error) {
	sysctls, err := podworkers.Sysctls(a.opts.Config.Kubelet.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("allowedUnsafeSysctls: %w", err)
	}
	hs := []podworkers.AdmitHandler{
		sysctls,
		podworkers.PodFeatures(config.FeatureEnabled(&a.opts.Config.Kubelet, "PodLevelResources")),
		allocate,
		podworkers.PodOS(goruntime.GOOS),
		podworkers.ResourceFit(alloc),
		podworkers.ExtendedFit(devices.ExtendedOffered(a.node)),
		podworkers.NodeAffinity(a.node),
		podworkers.NodeName(a.node),
		podworkers.NodePorts(),
		podworkers.Taints(a.node),
		podworkers.Validate(podconfig.ValidatePodForRuntime),
	}
	return append(hs, a.deps.AdmitHandlers...), nil
}

// node is this node's Node as the API server last said, nil in standalone
// mode or before it is known.
func (a *Agent) node() *v1.Node {
	if a.cluster == nil {
		return nil
	}
	if n := a.cluster.Node(); n != nil {
		return n
	}
	if a.nodeCtl != nil {
		return a.nodeCtl.Node()
	}
	return nil
}
