package devicemanager

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/internal/atomicfile"
	"github.com/kernelet/kernelet/internal/podutil"
)

// resource is one registered device plugin resource.
type resource struct {
	devices map[string]*pluginapi.Device
	// ep is the latest plugin (stopped once it went away); nil for a
	// resource known only from the checkpoint.
	ep *endpoint
	// older are the plugins of the resource that registered before ep
	// (from other sockets) and still run, oldest first: each one's device
	// lists still count, and when ep goes away the newest of them takes
	// its place, the devices kept (kubelet's endpoint store).
	older     []*endpoint
	stoppedAt time.Time
}

func (r *resource) connected() bool { return r.ep != nil && !r.ep.isStopped() }

// register makes ep the resource's plugin. The plugin it replaces keeps
// running among the older ones unless it had ep's socket (the same plugin
// registering again); it returns the endpoints to stop.
func (r *resource) register(ep *endpoint) (replaced []*endpoint) {
	if r.ep != nil && !r.ep.isStopped() {
		r.older = append(r.older, r.ep)
	}
	kept := r.older[:0]
	for _, o := range r.older {
		if o.socket == ep.socket {
			replaced = append(replaced, o)
			continue
		}
		kept = append(kept, o)
	}
	r.ep, r.older = ep, kept
	return replaced
}

// has tells whether ep is one of the resource's plugins.
func (r *resource) has(ep *endpoint) bool { return r.ep == ep || slices.Contains(r.older, ep) }

// unregister drops ep, which went away: when it was the resource's
// plugin, the newest older one takes its place. True when none is left
// (the devices turn unhealthy).
func (r *resource) unregister(ep *endpoint) (last bool) {
	if i := slices.Index(r.older, ep); i >= 0 {
		r.older = slices.Delete(r.older, i, i+1)
		return false
	}
	if r.ep != ep {
		return false
	}
	if n := len(r.older); n > 0 {
		r.ep, r.older = r.older[n-1], r.older[:n-1]
		return false
	}
	return true
}

// healthyOrNil is healthy of a resource that may be nil.
func (r *resource) healthyOrNil() []string {
	if r == nil {
		return nil
	}
	return r.healthy()
}

func (r *resource) healthy() []string {
	var out []string
	if !r.connected() {
		return nil
	}
	for id, d := range r.devices {
		if d.Health == pluginapi.Healthy {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// numa is the NUMA nodes of every device the plugin listed.
func (r *resource) numa() NUMA {
	out := NUMA{}
	for id, d := range r.devices {
		out[id] = nil
		if d.Topology != nil {
			for _, n := range d.Topology.Nodes {
				out[id] = append(out[id], n.ID)
			}
		}
	}
	return out
}

// Manager is the device plugin manager of the node.
type Manager struct {
	cfg Config
	now func() time.Time
	ctx context.Context
	// healthUpdates carries the pods whose devices changed health.
	healthUpdates chan []types.UID

	// allocMu serializes allocations (admission, re-allocation at
	// container creation); mu guards the state below.
	allocMu sync.Mutex
	// cpMu orders the checkpoint writes: each writes the state it read.
	cpMu      sync.Mutex
	mu        sync.Mutex
	resources map[string]*resource
	alloc     allocations
	// removed are the resources that expired: reported at 0.
	removed map[string]bool
	// affinity is the topology manager's affinity of each admitted
	// container (pod UID → container), kept in memory only as kubelet's
	// topology store: a re-allocation at container creation stays within it.
	affinity map[string]map[string]tm.Mask
	wg       sync.WaitGroup
}

// New returns a Manager; Start serves the registration socket.
func New(cfg Config) *Manager {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Manager{cfg: cfg, now: now, ctx: context.Background(), resources: map[string]*resource{},
		alloc: allocations{}, removed: map[string]bool{}, affinity: map[string]map[string]tm.Mask{}, healthUpdates: make(chan []types.UID, healthUpdatesCap)}
}

func (m *Manager) checkpointPath() string { return filepath.Join(m.cfg.Dir, CheckpointName) }

// Start reads the checkpoint (its resources are known, without plugin,
// until their plugins register again) and serves the registration socket
// until ctx ends. A checkpoint that cannot be read is logged and the
// manager starts empty, as kubelet.
func (m *Manager) Start(ctx context.Context) error {
	log := klog.FromContext(ctx)
	m.ctx = ctx
	d, found, err := readCheckpointFile(m.checkpointPath())
	if err != nil {
		log.Error(err, "Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date")
	}
	a, err := fromCheckpoint(d)
	if err != nil {
		log.Error(err, "Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date")
	}
	m.mu.Lock()
	m.alloc = a
	for r := range d.RegisteredDevices {
		m.resources[r] = &resource{devices: map[string]*pluginapi.Device{}, stoppedAt: m.now()}
	}
	m.mu.Unlock()
	if found {
		log.Info("Device plugin allocations read from the checkpoint", "pods", len(a), "resources", len(d.RegisteredDevices))
	}
	s, fi, err := m.serve(ctx, true)
	if err != nil {
		return err
	}
	m.wg.Go(func() { m.runServer(ctx, s, fi) })
	return nil
}

// Wait waits for the registration server and the plugins' streams to
// stop (after Start's ctx ended) and disconnects the plugins.
func (m *Manager) Wait() {
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.resources {
		if r.ep != nil {
			r.ep.stop()
		}
		for _, o := range r.older {
			o.stop()
		}
	}
}

// connect dials a registering plugin and watches its devices.
func (m *Manager) connect(ctx context.Context, name, socket string) error {
	ep, err := dialPlugin(ctx, name, socket)
	if err != nil {
		return err
	}
	m.mu.Lock()
	r := m.resources[name]
	if r == nil {
		r = &resource{devices: map[string]*pluginapi.Device{}}
		m.resources[name] = r
	}
	replaced := r.register(ep)
	r.stoppedAt = time.Time{}
	delete(m.removed, name)
	m.mu.Unlock()
	for _, old := range replaced {
		old.stop()
	}
	klog.FromContext(m.ctx).Info("Device plugin connected", "resourceName", name, "socket", socket,
		"preStartRequired", ep.preStartRequired(), "getPreferredAllocationAvailable", ep.preferredAvailable())
	m.wg.Go(func() {
		ep.run(m.ctx, func(devs []*pluginapi.Device) { m.devicesUpdated(name, ep, devs) })
		m.disconnected(name, ep)
	})
	return nil
}

// devicesUpdated takes a plugin's device list.
func (m *Manager) devicesUpdated(name string, ep *endpoint, devs []*pluginapi.Device) {
	m.mu.Lock()
	r := m.resources[name]
	if r == nil || !r.has(ep) {
		m.mu.Unlock()
		return
	}
	old := r.devices
	r.devices = map[string]*pluginapi.Device{}
	healthy := 0
	for _, d := range devs {
		r.devices[d.ID] = d
		if d.Health == pluginapi.Healthy {
			healthy++
		}
	}
	changed := m.changedHoldersLocked(name, old, r.devices)
	m.mu.Unlock()
	m.sendHealthUpdate(changed)
	klog.FromContext(m.ctx).V(2).Info("Processed device updates for resource", "resourceName", name, "totalCount", len(devs), "healthyCount", healthy)
	m.writeCheckpoint()
}

// disconnected marks the resource's devices unhealthy when ep was its
// last plugin; an older plugin still running takes the place of ep.
func (m *Manager) disconnected(name string, ep *endpoint) {
	m.mu.Lock()
	r := m.resources[name]
	if r != nil && r.unregister(ep) {
		r.stoppedAt = m.now()
	}
	m.mu.Unlock()
	ep.stop()
	klog.FromContext(m.ctx).Info("Device plugin disconnected", "resourceName", name, "socket", ep.socket)
}

// writeCheckpoint writes the allocations and the healthy devices; a
// failure is logged (the next change writes again).
func (m *Manager) writeCheckpoint() {
	m.cpMu.Lock()
	defer m.cpMu.Unlock()
	m.mu.Lock()
	healthy := map[string][]string{}
	for name, r := range m.resources {
		healthy[name] = r.healthy()
	}
	d, err := toCheckpoint(m.alloc, healthy, m.numaLocked)
	m.mu.Unlock()
	var b []byte
	if err == nil {
		b, err = EncodeCheckpoint(d)
	}
	if err == nil {
		err = atomicfile.Write(m.checkpointPath(), b, 0o644)
	}
	if err != nil {
		klog.FromContext(m.ctx).Error(err, "Failed to write checkpoint file", "checkpoint", m.checkpointPath())
	}
}

func (m *Manager) numaLocked(name, id string) []int64 {
	r := m.resources[name]
	if r == nil {
		return nil
	}
	return r.numa()[id]
}

// Capacity is what the node offers of the device plugin resources
// (Capacity), with the expired resources at 0 in both lists.
func (m *Manager) Capacity() (capacity, allocatable map[string]int64) {
	m.mu.Lock()
	rs := map[string]ResourceState{}
	for name, r := range m.resources {
		st := ResourceState{Connected: r.connected(), StoppedAt: r.stoppedAt}
		for _, d := range r.devices {
			if d.Health == pluginapi.Healthy {
				st.Healthy++
			} else {
				st.Unhealthy++
			}
		}
		rs[name] = st
	}
	c := Capacity(rs, m.now())
	for _, name := range c.Expired {
		delete(m.resources, name)
		m.removed[name] = true
	}
	for name := range m.removed {
		c.Capacity[name], c.Allocatable[name] = 0, 0
	}
	m.mu.Unlock()
	if len(c.Expired) > 0 {
		klog.FromContext(m.ctx).Info("Device plugin resources gone past their grace period; capacity set to 0", "resources", c.Expired)
		m.writeCheckpoint()
	}
	return c.Capacity, c.Allocatable
}

// Offered is what admission counts of each device plugin resource: the
// healthy devices of connected plugins (0 without one, and for the
// expired resources), never fewer than the containers hold (kubelet's
// sanitized allocatable).
func (m *Manager) Offered() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for name := range m.removed {
		out[name] = 0
	}
	for name, r := range m.resources {
		out[name] = int64(len(r.healthy()))
	}
	for name, n := range out {
		out[name] = max(n, int64(len(m.alloc.inUse(name))))
	}
	return out
}

// ExtendedOffered is what admission counts of the extended resources
// (podworkers.ExtendedFit): the Node's (an admin's, in a cluster; node may
// return nil) with the device plugins' (Offered) over them.
func (m *Manager) ExtendedOffered(node func() *v1.Node) func() map[v1.ResourceName]int64 {
	return func() map[v1.ResourceName]int64 {
		out := map[v1.ResourceName]int64{}
		if n := node(); n != nil {
			for name, q := range n.Status.Allocatable {
				if podutil.IsExtendedResourceName(string(name)) {
					out[name] = q.Value()
				}
			}
		}
		for name, n := range m.Offered() {
			out[v1.ResourceName(name)] = n
		}
		return out
	}
}

// isPluginResource tells whether a resource is a device plugin's: one
// registered or one some container holds.
func (m *Manager) isPluginResourceLocked(name string) bool {
	if _, ok := m.resources[name]; ok {
		return true
	}
	for _, cs := range m.alloc {
		for _, rs := range cs {
			if rs[name] != nil {
				return true
			}
		}
	}
	return false
}

// Release forgets the devices of pod uid (its containers are gone).
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	_, ok := m.alloc[string(uid)]
	delete(m.alloc, string(uid))
	delete(m.affinity, string(uid))
	m.mu.Unlock()
	if ok {
		m.writeCheckpoint()
	}
}

// holds tells whether pod uid holds any device.
func (m *Manager) holds(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.alloc[string(uid)]
	return ok
}

// Keep forgets the devices of every pod keep says no to (pods removed
// while the agent was down, or gone since). keep is asked without m.mu
// held: it may take the pod workers' lock, whose holder admits a pod
// under it and so takes m.mu (Offered, Allocate) — asking it under m.mu
// deadlocked the two.
func (m *Manager) Keep(keep PodFilter) {
	m.mu.Lock()
	uids := make(map[string]bool, len(m.alloc)+len(m.affinity))
	for uid := range m.alloc {
		uids[uid] = true
	}
	for uid := range m.affinity {
		uids[uid] = true
	}
	m.mu.Unlock()
	var drop []string
	for uid := range uids {
		if !keep(uid) {
			drop = append(drop, uid)
		}
	}
	if len(drop) == 0 {
		return
	}
	m.mu.Lock()
	var gone []string
	for _, uid := range drop {
		if _, ok := m.alloc[uid]; ok {
			gone = append(gone, uid)
			delete(m.alloc, uid)
		}
		delete(m.affinity, uid)
	}
	m.mu.Unlock()
	if len(gone) > 0 {
		slices.Sort(gone)
		klog.FromContext(m.ctx).V(2).Info("Releasing the devices of pods that are gone", "podUIDs", gone)
		m.writeCheckpoint()
	}
}

// Devices are what container of pod uid holds, by resource (sorted).
func (m *Manager) Devices(uid types.UID, container string) []ResourceDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.alloc[string(uid)][container]
	var out []ResourceDevices
	for _, name := range sortedKeys(rs) {
		out = append(out, m.resourceDevicesLocked(name, rs[name].DeviceIDs))
	}
	return out
}

// Allocatable are the healthy devices of the connected plugins, by
// resource (sorted).
func (m *Manager) Allocatable() []ResourceDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ResourceDevices
	for _, name := range sortedKeys(m.resources) {
		if ids := m.resources[name].healthy(); len(ids) > 0 {
			out = append(out, m.resourceDevicesLocked(name, ids))
		}
	}
	return out
}

func (m *Manager) resourceDevicesLocked(name string, ids []string) ResourceDevices {
	rd := ResourceDevices{Resource: name, DeviceIDs: slices.Clone(ids)}
	for _, id := range ids {
		if n := m.numaLocked(name, id); len(n) > 0 {
			if rd.Topology == nil {
				rd.Topology = map[string][]int64{}
			}
			rd.Topology[id] = n
		}
	}
	return rd
}

// updateReuse adds the container's devices to reuse (add) or takes them
// out.
func (m *Manager) updateReuse(uid types.UID, container string, reuse map[string][]string, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, ca := range m.alloc[string(uid)][container] {
		if add {
			for _, id := range ca.DeviceIDs {
				if !slices.Contains(reuse[name], id) {
					reuse[name] = append(reuse[name], id)
				}
			}
			continue
		}
		reuse[name] = slices.DeleteFunc(reuse[name], func(id string) bool { return slices.Contains(ca.DeviceIDs, id) })
	}
}

// allocateContainer allocates each device plugin resource container c
// asks for in its limits and not yet holds (those the scheduler backed by
// dynamic resource allocation for c left out, as kubelet).
func (m *Manager) allocateContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, reuse map[string][]string, affinity tm.Mask) error {
	for _, name := range sortedResourceNames(c.Resources.Limits) {
		q := c.Resources.Limits[v1.ResourceName(name)]
		if podutil.IsDRABackedResource(pod, c.Name, name) {
			continue
		}
		if err := m.allocateResource(ctx, pod, c.Name, name, int(q.Value()), reuse[name], affinity); err != nil {
			return err
		}
	}
	return nil
}

func sortedResourceNames(l v1.ResourceList) []string {
	out := make([]string, 0, len(l))
	for n := range l {
		out = append(out, string(n))
	}
	slices.Sort(out)
	return out
}

// allocateResource allocates need devices of resource name to one
// container within affinity (0: any), with kubelet's checks and errors.
func (m *Manager) allocateResource(ctx context.Context, pod *v1.Pod, container, name string, need int, reusable []string, affinity tm.Mask) error {
	uid := string(pod.UID)
	m.mu.Lock()
	if !m.isPluginResourceLocked(name) {
		m.mu.Unlock()
		return nil
	}
	if have := m.alloc.get(uid, container, name); have != nil {
		defer m.mu.Unlock()
		if len(have.DeviceIDs) != need {
			return fmt.Errorf(errChangedRequest, uid, container, name, len(have.DeviceIDs), need)
		}
		// allocated before (admitted again after an agent restart)
		if m.cfg.Running == nil || m.cfg.Running(pod.UID, container) {
			return nil
		}
		// A resource of the checkpoint is known with no healthy device until
		// its plugin registers again (kubelet's).
		r := m.resources[name]
		return HeldUsable(name, r != nil, r.healthyOrNil(), have.DeviceIDs)
	}
	r := m.resources[name]
	if r == nil {
		m.mu.Unlock()
		return fmt.Errorf(errUnregistered, name)
	}
	healthy := r.healthy()
	if len(healthy) == 0 {
		m.mu.Unlock()
		return fmt.Errorf(errNoHealthy, name)
	}
	if need == 0 {
		m.mu.Unlock()
		return nil
	}
	split := SplitByAffinity(Available(healthy, m.alloc.inUse(name)), r.numa(), affinity)
	ep := r.ep
	m.mu.Unlock()
	var preferred []string
	fromReuse := FromReusable(need, reusable)
	if rest := need - len(fromReuse); rest > 0 && ep.preferredAvailable() {
		var err error
		preferred, err = ep.preferred(ctx, append(slices.Clone(split.Candidates(rest)), fromReuse...), fromReuse, need)
		if err != nil {
			return fmt.Errorf(errPreferred, err)
		}
	}
	ids, err := Choose(name, need, reusable, split, preferred)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Allocating devices", "pod", klog.KObj(pod), "container", container, "resourceName", name, "devices", ids)
	start := m.now()
	resp, err := ep.allocate(ctx, ids)
	m.cfg.Metrics.allocated(name, m.now().Sub(start))
	if err != nil {
		return err
	}
	if len(resp.ContainerResponses) == 0 {
		return fmt.Errorf(errNoContainers, resp)
	}
	m.mu.Lock()
	m.alloc.set(uid, container, name, &ContainerAllocation{DeviceIDs: ids, Response: resp.ContainerResponses[0]})
	m.mu.Unlock()
	m.writeCheckpoint()
	return nil
}

// storeAffinity remembers the affinity container of pod uid was admitted
// with.
func (m *Manager) storeAffinity(uid types.UID, container string, affinity tm.Mask) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.affinity[string(uid)] == nil {
		m.affinity[string(uid)] = map[string]tm.Mask{}
	}
	m.affinity[string(uid)][container] = affinity
}

// storedAffinity is the affinity container of pod uid was admitted with;
// none (0) after an agent restart, as kubelet's topology store.
func (m *Manager) storedAffinity(uid types.UID, container string) tm.Mask {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.affinity[string(uid)][container]
}

// ContainerDevices are container c's run options from its devices, at its
// creation: devices a container asks for but does not hold (a plugin that
// registered after the pod's admission) are allocated now, within the
// topology manager's affinity of its admission, and
// PreStartContainer is called first for plugins that ask for it.
func (m *Manager) ContainerDevices(ctx context.Context, pod *v1.Pod, c *v1.Container) (podconfig.ContainerDevices, error) {
	uid := string(pod.UID)
	var names []string
	m.mu.Lock()
	missing := false
	for _, name := range sortedResourceNames(c.Resources.Limits) {
		q := c.Resources.Limits[v1.ResourceName(name)]
		if q.Value() == 0 || !m.isPluginResourceLocked(name) || podutil.IsDRABackedResource(pod, c.Name, name) {
			continue
		}
		names = append(names, name)
		missing = missing || m.alloc.get(uid, c.Name, name) == nil
	}
	m.mu.Unlock()
	if len(names) == 0 {
		return podconfig.ContainerDevices{}, nil
	}
	if missing {
		klog.FromContext(ctx).V(2).Info("Needs to re-allocate device plugin resources for pod", "pod", klog.KObj(pod), "containerName", c.Name)
		m.allocMu.Lock()
		err := m.allocateContainer(ctx, pod, c, nil, m.storedAffinity(pod.UID, c.Name))
		m.allocMu.Unlock()
		if err != nil {
			return podconfig.ContainerDevices{}, err
		}
	}
	var resps []*pluginapi.ContainerAllocateResponse
	for _, name := range names {
		m.mu.Lock()
		ca := m.alloc.get(uid, c.Name, name)
		var ep *endpoint
		r, known := m.resources[name]
		if known {
			ep = r.ep
		}
		m.mu.Unlock()
		if !known {
			return podconfig.ContainerDevices{}, fmt.Errorf(errNoEndpoint, name)
		}
		if ca == nil {
			return podconfig.ContainerDevices{}, fmt.Errorf(errNoDevicesCached, uid, c.Name, name)
		}
		if ep != nil && ep.preStartRequired() {
			if err := ep.preStartContainer(ctx, ca.DeviceIDs); err != nil {
				return podconfig.ContainerDevices{}, fmt.Errorf(errPreStart, err)
			}
		}
		resps = append(resps, ca.Response)
	}
	out, conflicts := MergeResponses(resps)
	for _, msg := range conflicts {
		klog.FromContext(ctx).Error(nil, "Device plugin allocations conflict; the first one is kept", "pod", klog.KObj(pod), "container", c.Name, "conflict", msg)
	}
	return out, nil
}
