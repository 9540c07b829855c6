package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Manager hands out and remembers the pods' ranges.
type Manager struct {
	cfg    Config
	length uint32 // IDs per pod
	first  int    // index of the first range (host ID / length)
	count  int    // number of ranges

	mu    sync.Mutex
	byPod map[types.UID]int // range index of each pod
	used  map[int]types.UID
}

// New checks cfg as kubelet does and reads back the allocations kept in
// the pod directories.
func New(cfg Config) (*Manager, error) {
	length := cfg.IDsPerPod
	if length == 0 {
		length = DefaultIDsPerPod
	}
	first, total := cfg.FirstID, cfg.Length
	if first == 0 && total == 0 {
		first, total = DefaultNodeIDs(length)
	}
	switch {
	case length%DefaultIDsPerPod != 0:
		return nil, fmt.Errorf("user namespaces: idsPerPod %d is not a multiple of %d", length, DefaultIDsPerPod)
	case first%length != 0:
		return nil, fmt.Errorf("user namespaces: the first assigned ID %d is not a multiple of %d", first, length)
	case first < length:
		return nil, fmt.Errorf("user namespaces: the first assigned ID %d must be greater or equal to %d", first, length)
	case total%length != 0:
		return nil, fmt.Errorf("user namespaces: the assigned IDs' length %d is not a multiple of %d", total, length)
	case int(total/length) < cfg.MaxPods:
		return nil, fmt.Errorf("user namespaces: the assigned IDs are not enough to support %d pods", cfg.MaxPods)
	}
	m := &Manager{cfg: cfg, length: length, first: int(first / length), count: int(total / length),
		byPod: map[types.UID]int{}, used: map[int]types.UID{}}
	entries, err := os.ReadDir(cfg.PodsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("user namespaces: read pods: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid := types.UID(e.Name())
		if _, err := m.readFile(uid); err != nil {
			return nil, fmt.Errorf("user namespaces: pod %s: %w", uid, err)
		}
	}
	return m, nil
}

// DefaultNodeIDs are kubelet's IDs when no subordinate IDs are assigned:
// every ID from idsPerPod on.
func DefaultNodeIDs(idsPerPod uint32) (first, length uint32) {
	return idsPerPod, uint32(1<<32 - uint64(idsPerPod))
}

// IDsPerPod is the length of a pod's range.
func (m *Manager) IDsPerPod() uint32 { return m.length }

// Mapping is the CRI user namespace of pod: NODE mode unless hostUsers is
// false; then, when supported (the pod's runtime handler's user namespace
// support, asked only for such pods) says yes, the pod's range —
// allocated now, or the one already kept for it — in POD mode. A handler
// without support gets kubelet's error.
func (m *Manager) Mapping(pod *v1.Pod, handler string, supported func() (bool, error)) (*runtimeapi.UserNamespace, error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	ok, err := supported()
	if err != nil || !ok {
		msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if handler != "" {
			msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", msg, err)
		}
		return nil, errors.New(msg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	idx, err := m.readFile(pod.UID)
	if err != nil {
		return nil, fmt.Errorf("user namespace: %w", err)
	}
	if idx < 0 {
		if idx, err = m.allocate(pod.UID); err != nil {
			return nil, fmt.Errorf("create user namespace: %w", err)
		}
	}
	host := uint32(idx) * m.length
	mapping := []*runtimeapi.IDMapping{{HostId: host, ContainerId: 0, Length: m.length}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping,
		Gids: []*runtimeapi.IDMapping{{HostId: host, ContainerId: 0, Length: m.length}}}, nil
}

// Allocated is the first host ID of uid's range.
func (m *Manager) Allocated(uid types.UID) (uint32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx, ok := m.byPod[uid]
	return uint32(idx) * m.length, ok
}

// InUse is the number of ranges in use.
func (m *Manager) InUse() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byPod)
}

// Release gives uid's range back and removes its file (kubelet releases
// when a pod terminated).
func (m *Manager) Release(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.release(uid)
}

// Cleanup releases the ranges of pods keep does not keep (pods no source
// wants and the runtime does not run) and of pods whose directory is gone.
// keep is asked without m.mu held: it may take the pod workers' lock,
// under which a terminated pod's range is released (Release).
func (m *Manager) Cleanup(keep func(types.UID) bool) error {
	m.mu.Lock()
	uids := slices.Collect(maps.Keys(m.byPod))
	m.mu.Unlock()
	var drop []types.UID
	for _, uid := range uids {
		_, err := os.Stat(filepath.Join(m.cfg.PodsDir, string(uid)))
		if !keep(uid) || errors.Is(err, fs.ErrNotExist) {
			drop = append(drop, uid)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, uid := range drop {
		if _, ok := m.byPod[uid]; ok {
			errs = append(errs, m.release(uid))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) release(uid types.UID) error {
	idx, ok := m.byPod[uid]
	if ok {
		delete(m.byPod, uid)
		delete(m.used, idx)
	}
	err := os.Remove(m.path(uid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// allocate takes the lowest free range for uid and keeps it in uid's
// directory (written and synced before the range is used).
func (m *Manager) allocate(uid types.UID) (int, error) {
	idx := -1
	for i := m.first; i < m.first+m.count; i++ {
		if _, taken := m.used[i]; !taken {
			idx = i
			break
		}
	}
	if idx < 0 {
		return -1, ErrNoRange
	}
	host := uint32(idx) * m.length
	one := []idMapping{{HostID: host, ContainerID: 0, Length: m.length}}
	if err := m.writeFile(uid, fileMapping{UIDMappings: one, GIDMappings: one}); err != nil {
		return -1, err
	}
	m.byPod[uid], m.used[idx] = idx, uid
	return idx, nil
}

func (m *Manager) path(uid types.UID) string {
	return filepath.Join(m.cfg.PodsDir, string(uid), MappingsFile)
}

// readFile records the range kept in uid's directory, -1 when none.
func (m *Manager) readFile(uid types.UID) (int, error) {
	b, err := os.ReadFile(m.path(uid))
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	var f fileMapping
	if err := json.Unmarshal(b, &f); err != nil {
		return -1, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	idx, err := m.check(f)
	if err != nil {
		return -1, err
	}
	if prev, ok := m.byPod[uid]; ok && prev != idx {
		return -1, fmt.Errorf("different user namespace range already used by pod %q", uid)
	}
	if owner, ok := m.used[idx]; ok && owner != uid {
		return -1, fmt.Errorf("range picked for pod %q already taken", uid)
	}
	m.byPod[uid], m.used[idx] = idx, uid
	return idx, nil
}

// check validates a mappings file as kubelet does and returns its range.
func (m *Manager) check(f fileMapping) (int, error) {
	switch {
	case len(f.UIDMappings) != 1:
		return -1, errors.New("invalid user namespace configuration: no more than one mapping allowed")
	case len(f.GIDMappings) != 1 || f.UIDMappings[0] != f.GIDMappings[0]:
		return -1, errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case f.UIDMappings[0].ContainerID != 0:
		return -1, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	mp := f.UIDMappings[0]
	if mp.Length != m.length {
		return -1, fmt.Errorf("wrong user namespace length %d", mp.Length)
	}
	if mp.HostID%m.length != 0 {
		return -1, fmt.Errorf("wrong user namespace offset specified %d", mp.HostID)
	}
	idx := int(mp.HostID / m.length)
	if idx < m.first || idx >= m.first+m.count {
		return -1, fmt.Errorf("id %d is out of range", mp.HostID)
	}
	return idx, nil
}
