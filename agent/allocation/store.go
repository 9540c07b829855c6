package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Checkpoint file names under the root directory (kubelet's).
const (
	AllocatedStateFile = "allocated_pods_state"
	ActuatedStateFile  = "actuated_pods_state"
)

// Store holds Resources per pod UID, in memory and — when it has a path —
// in a checkpoint file rewritten atomically on every change.
type Store struct {
	path string
	mu   sync.Mutex
	pods map[types.UID]Resources
}

// checkpoint is the file's content: the pods and a CRC-32 (IEEE) of their
// JSON encoding, so that a torn or edited file is noticed.
type checkpoint struct {
	Pods     map[types.UID]Resources `json:"pods"`
	Checksum uint32                  `json:"checksum"`
}

// NewMemoryStore returns a Store without a file.
func NewMemoryStore() *Store { return &Store{pods: map[types.UID]Resources{}} }

// OpenStore returns the Store kept at path, loading what the file holds.
// A missing file is an empty store; a corrupt one is an error naming it
// (the caller decides whether to start afresh with Reset).
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, pods: map[types.UID]Resources{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("allocation checkpoint %s: %w", path, err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return s, fmt.Errorf("allocation checkpoint %s: %w", path, err)
	}
	sum, err := checksum(cp.Pods)
	if err != nil {
		return s, fmt.Errorf("allocation checkpoint %s: %w", path, err)
	}
	if sum != cp.Checksum {
		return s, fmt.Errorf("allocation checkpoint %s: checksum %d, content sums to %d: corrupt", path, cp.Checksum, sum)
	}
	if cp.Pods != nil {
		s.pods = cp.Pods
	}
	return s, nil
}

func checksum(pods map[types.UID]Resources) (uint32, error) {
	b, err := json.Marshal(pods) // map keys are sorted: stable
	if err != nil {
		return 0, err
	}
	return crc32.ChecksumIEEE(b), nil
}

// Path is the checkpoint file ("" for a memory store).
func (s *Store) Path() string { return s.path }

// Get returns what the store holds for uid.
func (s *Store) Get(uid types.UID) (Resources, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pods[uid]
	if !ok {
		return Resources{}, false
	}
	return r.DeepCopy(), true
}

// Container returns what the store holds for one container of uid.
func (s *Store) Container(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pods[uid].Containers[name]
	return *r.DeepCopy(), ok
}

// PodLevel returns the pod-level requirements the store holds for uid;
// found is false when it holds none (no record, or a pod without
// pod-level resources).
func (s *Store) PodLevel(uid types.UID) (r *v1.ResourceRequirements, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pods[uid].Pod
	if p == nil {
		return nil, false
	}
	return p.DeepCopy(), true
}

// SetPodLevel records the pod-level requirements of uid (nil: none),
// keeping its containers'.
func (s *Store) SetPodLevel(uid types.UID, r *v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.pods[uid]
	if ok && apiequality.Semantic.DeepEqual(old.Pod, r) {
		return nil // unchanged: no rewrite of the file
	}
	cur := old.DeepCopy()
	cur.Pod = nil
	if r != nil {
		cur.Pod = r.DeepCopy()
	}
	s.pods[uid] = cur
	return s.saveLocked()
}

// Set records r for uid.
func (s *Store) Set(uid types.UID, r Resources) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[uid] = r.DeepCopy()
	return s.saveLocked()
}

// SetContainer records one container's requirements for uid, keeping the
// others.
func (s *Store) SetContainer(uid types.UID, name string, c v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[uid] = s.pods[uid].WithContainer(name, c)
	return s.saveLocked()
}

// Remove forgets uid.
func (s *Store) Remove(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[uid]; !ok {
		return nil
	}
	delete(s.pods, uid)
	return s.saveLocked()
}

// Keep forgets every pod keep says no to.
func (s *Store) Keep(keep func(types.UID) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.pods)
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
		}
	}
	if len(s.pods) == n {
		return nil
	}
	return s.saveLocked()
}

// UIDs lists the pods the store holds.
func (s *Store) UIDs() []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]types.UID, 0, len(s.pods))
	for uid := range s.pods {
		out = append(out, uid)
	}
	return out
}

// Reset empties the store and its file.
func (s *Store) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = map[types.UID]Resources{}
	return s.saveLocked()
}

// saveLocked writes the file: a temporary file beside it, synced, then
// renamed over it, so that a crash leaves the old or the new content.
func (s *Store) saveLocked() error {
	if s.path == "" {
		return nil
	}
	sum, err := checksum(s.pods)
	if err != nil {
		return fmt.Errorf("allocation checkpoint %s: %w", s.path, err)
	}
	b, err := json.Marshal(checkpoint{Pods: s.pods, Checksum: sum})
	if err != nil {
		return fmt.Errorf("allocation checkpoint %s: %w", s.path, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("allocation checkpoint %s: %w", s.path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(s.path), "."+filepath.Base(s.path)+".*")
	if err != nil {
		return fmt.Errorf("allocation checkpoint %s: %w", s.path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, s.path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("allocation checkpoint %s: %w", s.path, werr)
	}
	return nil
}
