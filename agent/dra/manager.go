package dra

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Manager prepares and unprepares the pods' ResourceClaims through the
// registered DRA plugins. Its methods are safe on a nil *Manager
// (preparation then fails, there is nothing to unprepare).
type Manager struct {
	cfg         Config
	wipingDelay time.Duration
	// bg is the context of background work (wipes, health streams); Run
	// ends it and waits for the health streams (wg), whose end writes the
	// health checkpoint.
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards plugins and wipes.
	mu      sync.Mutex
	plugins map[string][]*plugin
	wipes   map[string]*time.Timer

	// claimsMu guards claims; loadErr is a checkpoint that could not
	// be read (nothing is prepared then).
	claimsMu sync.Mutex
	claims   *cache
	loadErr  error

	// healthMu guards health: each driver's devices' health by
	// pool/device, checkpointed in healthFile (""; none); healthUpdates
	// the pods whose devices changed health.
	healthMu      sync.Mutex
	health        map[string]map[string]deviceHealth
	healthFile    string
	healthUpdates chan []types.UID
}

// New makes a Manager and reads its checkpoints back.
func New(cfg Config) *Manager {
	m := &Manager{cfg: cfg, wipingDelay: cfg.WipingDelay, plugins: map[string][]*plugin{}, wipes: map[string]*time.Timer{},
		health: map[string]map[string]deviceHealth{}, healthUpdates: make(chan []types.UID, healthUpdatesCap)}
	if m.wipingDelay <= 0 {
		m.wipingDelay = WipingDelay
	}
	m.bg, m.cancel = context.WithCancel(context.Background())
	cfg.Metrics.use(m)
	m.claims, m.loadErr = loadCache(filepath.Join(cfg.RootDir, StateFile))
	if m.loadErr != nil {
		m.loadErr = fmt.Errorf("DRA state file: %w (drain the node and remove the DRA state file)", m.loadErr)
	}
	if cfg.RootDir != "" {
		m.healthFile = filepath.Join(cfg.RootDir, HealthStateFile)
		if h, err := loadHealth(m.healthFile); err != nil {
			klog.Background().Error(err, "Failed to load health checkpoint, proceeding with empty cache")
		} else {
			m.health = h
		}
	}
	return m
}

// Run wipes the node's ResourceSlices once (no driver is usable before its
// plugin registers), then every ReconcilePeriod, once ready (every pod
// source seen) says so, unprepares the claims of pods that known (the
// pods the agent knows) no longer has; until ctx ends.
func (m *Manager) Run(ctx context.Context, known func() []*v1.Pod, ready func() bool) {
	if m == nil {
		return
	}
	defer m.wg.Wait()
	defer m.cancel()
	stop := context.AfterFunc(ctx, m.cancel)
	defer stop()
	go m.wipeSlices(klog.NewContext(m.bg, klog.FromContext(ctx)), "")
	t := time.NewTicker(ReconcilePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.mu.Lock()
			for _, w := range m.wipes {
				w.Stop()
			}
			m.mu.Unlock()
			return
		case <-t.C:
			if ready() {
				m.Reconcile(ctx, known())
			}
		}
	}
}

// Reconcile unprepares the claims of the pods that are not in known
// (kubelet's reconcile loop); failures are logged and retried next time.
func (m *Manager) Reconcile(ctx context.Context, known []*v1.Pod) {
	if m == nil {
		return
	}
	keep := map[string]bool{}
	for _, p := range known {
		keep[string(p.UID)] = true
	}
	type gone struct {
		ns    string
		names []string
	}
	orphans := map[types.UID]*gone{}
	m.claimsMu.Lock()
	for _, ci := range m.claims.claims {
		for uid := range ci.PodUIDs {
			if keep[uid] {
				continue
			}
			if orphans[types.UID(uid)] == nil {
				orphans[types.UID(uid)] = &gone{ns: ci.Namespace}
			}
			orphans[types.UID(uid)].names = append(orphans[types.UID(uid)].names, ci.ClaimName)
		}
	}
	m.claimsMu.Unlock()
	for uid, g := range orphans {
		if err := m.unprepare(ctx, uid, g.ns, g.names); err != nil {
			klog.FromContext(ctx).Info("Unpreparing pod resources in reconcile loop failed, will retry", "podUID", uid, "err", err)
		}
	}
}

// PrepareResources prepares pod's claims, its extended resource claim
// too (kubelet's PrepareDynamicResources): nothing changes in the cache until every claim
// was fetched and checked and its drivers are registered.
func (m *Manager) PrepareResources(ctx context.Context, pod *v1.Pod) error {
	start := time.Now()
	err := m.prepare(ctx, pod)
	if m != nil {
		m.cfg.Metrics.operation("PrepareResources", start, err)
	}
	if err != nil {
		return fmt.Errorf("prepare dynamic resources: %w", err)
	}
	return nil
}

// fetched is a claim of the pod, checked, with its plugins.
type fetched struct {
	claim   *resourceapi.ResourceClaim
	state   *ClaimState
	plugins map[string]*plugin
}

func (m *Manager) prepare(ctx context.Context, pod *v1.Pod) error {
	podClaims := podResourceClaims(pod)
	switch {
	case len(podClaims) == 0:
		return nil
	case m == nil:
		return errors.New("dynamic resource allocation needs the node plugins (not with --runonce)")
	case m.loadErr != nil:
		return m.loadErr
	case m.cfg.Client == nil:
		return errors.New("no API server to fetch ResourceClaims from")
	}
	var claims []fetched
	for i := range podClaims {
		f, ok, err := m.fetch(ctx, pod, &podClaims[i])
		if err != nil {
			return err
		}
		if ok {
			claims = append(claims, f)
		}
	}
	batches, toPrepare, err := m.reserve(pod, claims)
	if err != nil {
		return err
	}
	if err := m.callPrepare(ctx, batches, toPrepare); err != nil {
		return err
	}
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	for key := range toPrepare {
		if ci := m.claims.claims[key]; ci != nil {
			ci.prepared = true
		}
	}
	if err := m.claims.sync(); err != nil {
		return fmt.Errorf("checkpoint ResourceClaim state: %w", err)
	}
	return nil
}

// fetch gets and checks the ResourceClaim of pc (ok false: none was
// generated for it, nothing to do).
func (m *Manager) fetch(ctx context.Context, pod *v1.Pod, pc *v1.PodResourceClaim) (fetched, bool, error) {
	name, mustCheckOwner, err := resourceclaim.Name(pod, pc)
	if err != nil || name == nil {
		return fetched{}, false, err
	}
	claim, err := m.cfg.Client.ResourceClaims(pod.Namespace).Get(ctx, *name, metav1.GetOptions{})
	if err != nil {
		return fetched{}, false, fmt.Errorf("fetch ResourceClaim %s: %w", *name, err)
	}
	if err := checkClaimForPod(pod, claim, mustCheckOwner); err != nil {
		return fetched{}, false, err
	}
	st, err := newClaimState(claim)
	if err != nil {
		return fetched{}, false, fmt.Errorf("ResourceClaim %s: %w", claim.Name, err)
	}
	f := fetched{claim: claim, state: st, plugins: map[string]*plugin{}}
	for driver := range st.DriverState {
		if f.plugins[driver], err = m.pluginFor(driver); err != nil {
			return fetched{}, false, err
		}
	}
	return f, true, nil
}

// reserve records pod in its claims' cache entries (checkpointed before
// any driver is called, so a pod that goes meanwhile is unprepared by the
// reconcile loop) and groups the claims not prepared yet by driver.
func (m *Manager) reserve(pod *v1.Pod, claims []fetched) (map[*plugin][]*drapb.Claim, map[string]*resourceapi.ResourceClaim, error) {
	batches := map[*plugin][]*drapb.Claim{}
	toPrepare := map[string]*resourceapi.ResourceClaim{}
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	for _, f := range claims {
		key := claimKey(f.claim.Namespace, f.claim.Name)
		ci := m.claims.claims[key]
		switch {
		case ci == nil:
			ci = &claimInfo{ClaimState: *f.state}
			m.claims.claims[key] = ci
		case ci.ClaimUID != f.claim.UID:
			return nil, nil, fmt.Errorf("old ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", f.claim.Name, ci.ClaimUID)
		case ci.unpreparing:
			return nil, nil, fmt.Errorf("ResourceClaim %s is being unprepared", f.claim.Name)
		}
		ci.PodUIDs.Insert(string(pod.UID))
		if err := m.claims.sync(); err != nil {
			return nil, nil, fmt.Errorf("checkpoint ResourceClaim cache: %w", err)
		}
		if ci.prepared {
			continue
		}
		toPrepare[key] = f.claim
		req := &drapb.Claim{Namespace: ci.Namespace, Uid: string(ci.ClaimUID), Name: ci.ClaimName}
		for _, driver := range sortedDrivers(ci.DriverState) {
			p := f.plugins[driver]
			batches[p] = append(batches[p], req)
		}
	}
	return batches, toPrepare, nil
}

// callPrepare calls NodePrepareResources once per plugin and records the
// devices each driver prepared (a retry replaces them).
func (m *Manager) callPrepare(ctx context.Context, batches map[*plugin][]*drapb.Claim, claims map[string]*resourceapi.ResourceClaim) error {
	byUID := map[string]string{}
	for key, c := range claims {
		byUID[string(c.UID)] = key
	}
	for p, reqs := range batches {
		resp, err := p.prepare(ctx, &drapb.NodePrepareResourcesRequest{Claims: reqs})
		if err != nil {
			return fmt.Errorf("NodePrepareResources: %w", err)
		}
		errs := map[string]string{}
		for uid, res := range resp.GetClaims() {
			errs[uid] = res.GetError()
		}
		if err := checkResults("NodePrepareResources", reqs, errs); err != nil {
			return err
		}
		for uid, res := range resp.GetClaims() {
			m.setDevices(byUID[uid], p.driver, res.GetDevices())
		}
	}
	return nil
}

// setDevices records what driver prepared for the claim of key.
func (m *Manager) setDevices(key, driver string, devs []*drapb.Device) {
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	ci := m.claims.claims[key]
	if ci == nil {
		return
	}
	ds := DriverState{}
	for _, d := range devs {
		ds.Devices = append(ds.Devices, Device{PoolName: d.GetPoolName(), DeviceName: d.GetDeviceName(), ShareID: (*types.UID)(d.ShareId),
			RequestNames: d.GetRequestNames(), CDIDeviceIDs: d.GetCdiDeviceIds()})
	}
	ci.DriverState[driver] = ds
}

// checkResults is kubelet's check of a plugin's answer for reqs (errs:
// each claim's error by UID): no unknown claim, no claim failed, none
// skipped.
func checkResults(call string, reqs []*drapb.Claim, errs map[string]string) error {
	for uid, msg := range errs {
		req := findClaim(reqs, uid)
		if req == nil {
			return fmt.Errorf("%s returned result for unknown claim UID %s", call, uid)
		}
		if msg != "" {
			return fmt.Errorf("%s failed for ResourceClaim %s: %s", call, req.Name, msg)
		}
	}
	if n := len(reqs) - len(errs); n != 0 {
		return fmt.Errorf("%s skipped %d ResourceClaims", call, n)
	}
	return nil
}

func findClaim(reqs []*drapb.Claim, uid string) *drapb.Claim {
	for _, r := range reqs {
		if r.Uid == uid {
			return r
		}
	}
	return nil
}

func sortedDrivers(ds map[string]DriverState) []string {
	out := make([]string, 0, len(ds))
	for d := range ds {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}
