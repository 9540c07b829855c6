package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/internal/atomicfile"
)

// Checkpoint file names under the root directory (kubelet's).
const (
	AllocatedStateFile = "allocated_pods_state"
	ActuatedStateFile  = "actuated_pods_state"
)

// Store holds Resources per pod UID, in memory and — when it has a path —
// in a checkpoint file rewritten atomically (internal/atomicfile: synced,
// then renamed) before a change returns.
//
// The file is written cheaply, as pods come and go at density:
//   - each pod's JSON encoding is kept (enc), so a write encodes only the
//     pod that changed and concatenates the others;
//   - a change that changes nothing (the same requirements again, no
//     pod-level record for a pod without one) writes nothing;
//   - concurrent changes share writes (group commit): a change returns
//     once a write that began after it is done, and one write takes every
//     change made before it;
//   - forgetting pods (Remove, Keep) is not written at once but with the
//     next change, or ForgetDelay later: a forgotten pod's record that
//     survives a crash is dropped by the next start's Keep (the pods no
//     source wants), while a record that a change returned for is never
//     lost.
type Store struct {
	path string
	mu   sync.Mutex
	pods map[types.UID]Resources
	// enc is each pod's entry in the file's JSON object of pods ("uid":
	// followed by its encoding; a file store only).
	enc map[types.UID][]byte
	// gen counts the changes; written is the gen the file holds.
	gen, written uint64
	// changed is the gen of each pod's record's last change (loaded
	// records: a gen of their own too), so 0 means no record.
	changed map[types.UID]uint64
	// flushing is set while a deferred write of forgotten pods is due.
	flushing bool
	// writeMu serializes the file writes.
	writeMu sync.Mutex
}

// ForgetDelay is how long forgotten pods (Remove, Keep) may stay in the
// file when no other change writes it.
const ForgetDelay = 5 * time.Second

// checkpoint is the file's content: the pods and a CRC-32 (IEEE) of their
// JSON encoding, so that a torn or edited file is noticed.
type checkpoint struct {
	Pods     map[types.UID]Resources `json:"pods"`
	Checksum uint32                  `json:"checksum"`
}

// NewMemoryStore returns a Store without a file.
func NewMemoryStore() *Store {
	return &Store{pods: map[types.UID]Resources{}, changed: map[types.UID]uint64{}}
}

// OpenStore returns the Store kept at path, loading what the file holds.
// A missing file is an empty store; a corrupt one is an error naming it
// (the caller decides whether to start afresh with Reset).
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, pods: map[types.UID]Resources{}, enc: map[types.UID][]byte{}, changed: map[types.UID]uint64{}}
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
	b, err = json.Marshal(cp.Pods) // map keys are sorted: stable
	if err != nil {
		return s, fmt.Errorf("allocation checkpoint %s: %w", path, err)
	}
	if sum := crc32.ChecksumIEEE(b); sum != cp.Checksum {
		return s, fmt.Errorf("allocation checkpoint %s: checksum %d, content sums to %d: corrupt", path, cp.Checksum, sum)
	}
	for uid, r := range cp.Pods {
		if err := s.encode(uid, r); err != nil {
			return s, err
		}
		s.pods[uid] = r
		s.gen++
		s.changed[uid] = s.gen
	}
	s.written = s.gen // the file holds what was loaded
	return s, nil
}

// Path is the checkpoint file ("" for a memory store).
func (s *Store) Path() string { return s.path }

// PodGeneration changes whenever uid's record changes (set, changed,
// forgotten); 0 when the store holds none. Equal values, equal record.
func (s *Store) PodGeneration(uid types.UID) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed[uid]
}

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
	return s.change(uid, func(old Resources, ok bool) (Resources, bool) {
		if (!ok && r == nil) || (ok && apiequality.Semantic.DeepEqual(old.Pod, r)) {
			return old, false // unchanged: no rewrite of the file
		}
		cur := old.DeepCopy()
		cur.Pod = nil
		if r != nil {
			cur.Pod = r.DeepCopy()
		}
		return cur, true
	})
}

// Set records r for uid.
func (s *Store) Set(uid types.UID, r Resources) error {
	return s.change(uid, func(old Resources, ok bool) (Resources, bool) {
		if ok && Equal(old, r) {
			return old, false
		}
		return r.DeepCopy(), true
	})
}

// SetContainer records one container's requirements for uid, keeping the
// others.
func (s *Store) SetContainer(uid types.UID, name string, c v1.ResourceRequirements) error {
	return s.change(uid, func(old Resources, ok bool) (Resources, bool) {
		if cur, found := old.Containers[name]; ok && found && apiequality.Semantic.DeepEqual(cur, c) {
			return old, false
		}
		return old.WithContainer(name, c), true
	})
}

// change applies f to uid's record (ok: there is one) and, when f says it
// changed, writes the file before returning.
func (s *Store) change(uid types.UID, f func(old Resources, ok bool) (Resources, bool)) error {
	s.mu.Lock()
	old, ok := s.pods[uid]
	cur, changed := f(old, ok)
	if !changed {
		s.mu.Unlock()
		return nil
	}
	if err := s.encode(uid, cur); err != nil {
		s.mu.Unlock()
		return err
	}
	s.pods[uid] = cur
	s.gen++
	s.changed[uid] = s.gen
	gen := s.gen
	s.mu.Unlock()
	return s.flush(gen)
}

// encode keeps uid's entry with r (a file store only); s.mu is held.
func (s *Store) encode(uid types.UID, r Resources) error {
	if s.path == "" {
		return nil
	}
	key, err := json.Marshal(string(uid))
	if err != nil {
		return fmt.Errorf("allocation checkpoint %s: pod %s: %w", s.path, uid, err)
	}
	val, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("allocation checkpoint %s: pod %s: %w", s.path, uid, err)
	}
	s.enc[uid] = append(append(key, ':'), val...)
	return nil
}

// Remove forgets uid (written with the next change, or ForgetDelay later).
func (s *Store) Remove(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[uid]; !ok {
		return nil
	}
	s.forgetLocked(uid)
	return nil
}

// Keep forgets every pod keep says no to (written as Remove's).
func (s *Store) Keep(keep func(types.UID) bool) error {
	// keep is asked without s.mu held: it may take the pod workers' lock,
	// whose holder records an admitted pod's allocation (Set) under it.
	var gone []types.UID
	for _, uid := range s.UIDs() {
		if !keep(uid) {
			gone = append(gone, uid)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uid := range gone {
		if _, ok := s.pods[uid]; ok {
			s.forgetLocked(uid)
		}
	}
	return nil
}

// forgetLocked drops uid and makes sure a write follows; s.mu is held.
func (s *Store) forgetLocked(uid types.UID) {
	delete(s.pods, uid)
	delete(s.enc, uid)
	delete(s.changed, uid)
	s.gen++
	if s.path == "" || s.flushing {
		return
	}
	s.flushing = true
	time.AfterFunc(ForgetDelay, func() {
		s.mu.Lock()
		s.flushing = false
		gen := s.gen
		s.mu.Unlock()
		// A failed write is tried again by the next change; a directory
		// removed meanwhile (a test's) is not made again.
		if _, err := os.Stat(filepath.Dir(s.path)); err == nil {
			_ = s.flush(gen)
		}
	})
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
	s.pods = map[types.UID]Resources{}
	s.changed = map[types.UID]uint64{}
	if s.path != "" {
		s.enc = map[types.UID][]byte{}
	}
	s.gen++
	gen := s.gen
	s.mu.Unlock()
	return s.flush(gen)
}

// Flush writes what the store holds now (forgotten pods included) unless
// the file has it already.
func (s *Store) Flush() error {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	return s.flush(gen)
}

// flush returns once the file holds change gen: written by this call, or
// by one that began after that change (its content taken when it began).
func (s *Store) flush(gen uint64) error {
	if s.path == "" {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.written >= gen {
		s.mu.Unlock()
		return nil
	}
	at, b := s.gen, s.contentLocked()
	s.mu.Unlock()
	if err := atomicfile.Write(s.path, b, 0o600); err != nil {
		return fmt.Errorf("allocation checkpoint: %w", err)
	}
	s.mu.Lock()
	s.written = at
	s.mu.Unlock()
	return nil
}

// contentLocked is the file's content from the pods' encodings: what
// json.Marshal of the checkpoint gives (its map keys sorted), built
// without encoding the pods again; s.mu is held.
func (s *Store) contentLocked() []byte {
	uids := slices.Sorted(maps.Keys(s.enc))
	n := 0
	for _, uid := range uids {
		n += len(s.enc[uid]) + 1
	}
	pods := make([]byte, 0, n+2)
	pods = append(pods, '{')
	for i, uid := range uids {
		if i > 0 {
			pods = append(pods, ',')
		}
		pods = append(pods, s.enc[uid]...)
	}
	pods = append(pods, '}')
	out := make([]byte, 0, len(pods)+40)
	out = append(out, `{"pods":`...)
	out = append(out, pods...)
	out = append(out, `,"checksum":`...)
	out = strconv.AppendUint(out, uint64(crc32.ChecksumIEEE(pods)), 10)
	return append(out, '}')
}
