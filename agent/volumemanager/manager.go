package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/csi"
)

// Manager mounts and unmounts the pods' CSI persistent volumes.
type Manager struct {
	cfg Config
	now func() time.Time

	mu sync.Mutex
	// staged are the volumes staged (or whose staging is uncertain) by
	// unique name; published the pods' published volumes by PV name.
	staged    map[v1.UniqueVolumeName]*stagedVol
	published map[types.UID]map[string]*publishedVol
	// desired are the volumes of the pods being set up or running, by
	// pod; resolved caches each pod volume's spec.
	desired  map[types.UID]map[v1.UniqueVolumeName]bool
	resolved map[types.UID]map[string]volumeSpec
	// usage caches the volumes' stats (Usage); health is each pod's
	// status.volumeHealth (ProbeHealth).
	usage  map[usageKey]VolumeUsage
	health map[types.UID][]v1.PodVolumeHealth
	// rejected are the pods rejected at the end of their wait
	// (AttachLimitError), with the message.
	rejected map[types.UID]string
	// resize is each volume's node expansion state, until unstaged.
	resize map[v1.UniqueVolumeName]*resizeState
	// locks serialize the operations on one volume, podLocks on one pod.
	locks    map[v1.UniqueVolumeName]*sync.Mutex
	podLocks map[types.UID]*sync.Mutex
}

// stagedVol is a volume's global mount.
type stagedVol struct {
	driver, handle string
	// pvName and block: a block volume's paths are named by its PV.
	pvName string
	block  bool
	// mounted: the staging path is a mount point (false: a leftover
	// found at reconstruction, staged again before use).
	mounted bool
}

// publishedVol is a volume published for a pod.
type publishedVol struct {
	pvName, driver, handle string
	target                 string
	mounted                bool
	// block: mapped to the pod's device link; inline: a CSI ephemeral
	// inline volume (never staged, not in volumesInUse); local: a local
	// PV bind-mounted at target (no driver); republish: its
	// driver requiresRepublish, which reconstructed volumes (checked
	// false) learn at their first sync.
	block, inline, local, republish, checked bool
}

// unique is the volume's name in volumesInUse.
func (p *publishedVol) unique() v1.UniqueVolumeName {
	if p.local {
		return localUniqueName(p.pvName)
	}
	return UniqueVolumeName(p.driver, p.handle)
}

// want records that pod uid wants volume u (volumesInUse).
func (m *Manager) want(uid types.UID, u v1.UniqueVolumeName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.desired[uid] == nil {
		m.desired[uid] = map[v1.UniqueVolumeName]bool{}
	}
	m.desired[uid][u] = true
}

// New returns a Manager; call Reconstruct before the first SetUp.
func New(cfg Config) *Manager {
	if cfg.PodsDir == "" {
		cfg.PodsDir = filepath.Join(cfg.RootDir, "pods")
	}
	if cfg.Dial == nil {
		cfg.Dial = csi.Dial
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = DefaultWaitTimeout
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	return &Manager{
		cfg: cfg, now: time.Now,
		staged: map[v1.UniqueVolumeName]*stagedVol{}, published: map[types.UID]map[string]*publishedVol{},
		desired: map[types.UID]map[v1.UniqueVolumeName]bool{}, resolved: map[types.UID]map[string]volumeSpec{},
		locks: map[v1.UniqueVolumeName]*sync.Mutex{}, podLocks: map[types.UID]*sync.Mutex{},
		usage: map[usageKey]VolumeUsage{}, health: map[types.UID][]v1.PodVolumeHealth{}, rejected: map[types.UID]string{}, resize: map[v1.UniqueVolumeName]*resizeState{},
	}
}

func (m *Manager) volumeLock(u v1.UniqueVolumeName) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.locks[u]
	if l == nil {
		l = &sync.Mutex{}
		m.locks[u] = l
	}
	return l
}

func (m *Manager) podLock(uid types.UID) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.podLocks[uid]
	if l == nil {
		l = &sync.Mutex{}
		m.podLocks[uid] = l
	}
	return l
}

// VolumesInUse are the unique names of the volumes staged, published or
// wanted by a pod, sorted: the node status's volumesInUse.
func (m *Manager) VolumesInUse() []v1.UniqueVolumeName {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[v1.UniqueVolumeName]bool{}
	for u := range m.staged {
		set[u] = true
	}
	for _, vols := range m.published {
		for _, p := range vols {
			if !p.inline {
				set[p.unique()] = true
			}
		}
	}
	for _, us := range m.desired {
		for u := range us {
			set[u] = true
		}
	}
	out := make([]v1.UniqueVolumeName, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Handles tells whether a pod has volumes this manager mounts.
func Handles(pod *v1.Pod) bool { return len(csiVolumes(pod)) > 0 }

// SetUp makes pod's PVC and CSI inline volumes ready and returns each
// one's host path by volume name (a block volume's: the pod's device
// link), waiting for them up to WaitTimeout. On failure the
// error joins each pending volume's last error and, once the wait is
// over, kubelet's "Unable to attach or mount volumes: …".
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	vols := csiVolumes(pod)
	if len(vols) == 0 {
		return nil, nil
	}
	if m.cfg.Client == nil {
		var errs []error
		for _, v := range vols {
			errs = append(errs, fmt.Errorf("volume %q: %w", v.Name, ErrNoAPIServer))
		}
		return nil, errors.Join(errs...)
	}
	pl := m.podLock(pod.UID)
	pl.Lock()
	defer pl.Unlock()
	deadline := m.now().Add(m.cfg.WaitTimeout)
	reported := map[string]*reportState{}
	for {
		paths, pending, permanent := m.attempt(ctx, pod, vols)
		if len(pending) == 0 {
			return paths, nil
		}
		if permanent || ctx.Err() != nil || !m.now().Before(deadline) {
			if !permanent && ctx.Err() == nil && m.exhausted(ctx, pod, pending) {
				return paths, m.reject(pod.UID, vols, pending)
			}
			return paths, waitError(vols, pending, ctx.Err(), permanent, m.cfg.Warn != nil)
		}
		m.report(pod, pending, reported)
		select {
		case <-ctx.Done():
		case <-time.After(m.cfg.RetryInterval):
		}
	}
}

// volumeError is a pending volume's last error; unattached tells it
// waits for its attachment.
type volumeError struct {
	err        error
	unattached bool
	// unprocessed: the volume could not be resolved to its PV (kubelet's
	// "failed to process volumes").
	unprocessed bool
}

// attempt tries once to get every volume of pod ready.
func (m *Manager) attempt(ctx context.Context, pod *v1.Pod, vols []v1.Volume) (map[string]string, map[string]volumeError, bool) {
	paths := map[string]string{}
	pending := map[string]volumeError{}
	permanent := false
	for _, v := range vols {
		p, verr := m.ensure(ctx, pod, v)
		if verr.err != nil {
			pending[v.Name] = verr
			permanent = permanent || errors.Is(verr.err, ErrUnsupported)
			continue
		}
		paths[v.Name] = p
	}
	return paths, pending, permanent
}

// reportState is when a volume's failure was last reported.
type reportState struct {
	msg   string
	next  time.Time
	delay time.Duration
}

// report records a FailedMount per failed operation (not for claims that
// do not resolve or volumes not attached yet: kubelet reports those in the
// final message only), again when its message changes or its backoff is
// over.
func (m *Manager) report(pod *v1.Pod, pending map[string]volumeError, reported map[string]*reportState) {
	if m.cfg.Warn == nil {
		return
	}
	now := m.now()
	for name, pe := range pending {
		if pe.unprocessed || pe.unattached {
			continue // kubelet logs these and reports them in the final summary
		}
		msg := pe.err.Error()
		r := reported[name]
		switch {
		case r == nil || r.msg != msg:
			r = &reportState{msg: msg, delay: initialEventBackoff}
			reported[name] = r
		case now.Before(r.next):
			continue
		default:
			r.delay = min(2*r.delay, maxEventBackoff)
		}
		r.next = now.Add(r.delay)
		m.cfg.Warn(pod, EventFailedMount, msg)
	}
}

// waitError is kubelet's error at the end of the wait for a pod's volumes,
// joined after each volume's last error (left out when they were
// reported as events already, but for the claims that did not resolve).
func waitError(vols []v1.Volume, pending map[string]volumeError, ctxErr error, permanent, reported bool) error {
	var unmounted, unattached, unprocessed []string
	var errs []error
	for _, v := range vols {
		pe, ok := pending[v.Name]
		if !ok {
			continue
		}
		unmounted = append(unmounted, v.Name)
		if pe.unattached {
			unattached = append(unattached, v.Name)
		}
		if pe.unprocessed {
			unprocessed = append(unprocessed, v.Name)
		}
		if permanent || pe.unprocessed || pe.unattached || !reported {
			errs = append(errs, pe.err)
		}
	}
	sort.Strings(unmounted)
	sort.Strings(unattached)
	sort.Strings(unprocessed)
	if !permanent {
		cause := ctxErr
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		errs = append(errs, &TimeoutError{Unmounted: unmounted, Unattached: unattached, Unprocessed: unprocessed, Cause: cause})
	}
	return errors.Join(errs...)
}

// TimeoutError is the end of the wait for a pod's volumes, in kubelet's
// words ("Unable to attach or mount volumes: …").
type TimeoutError struct {
	Unmounted, Unattached, Unprocessed []string
	Cause                              error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %v",
		e.Unmounted, e.Unattached, e.Unprocessed, e.Cause)
}

func (e *TimeoutError) Unwrap() error { return e.Cause }
