package live

import (
	"context"
	"sync"
	"time"
)

// CacheFor is how long one snapshot answers every dashboard and `kernelet
// top` client: they all ask about once a second.
const CacheFor = 500 * time.Millisecond

// View is the agent's side of the live dashboard and `kernelet top`: the
// event hub the pod side publishes to, the OOM kills seen in pod
// statuses, and the snapshot, read through the function NewView was given
// (the agent's cgroup reads) and cached for CacheFor.
type View struct {
	Hub  *Hub
	OOMs *OOMTracker

	read   func(ctx context.Context) (SnapshotInput, error)
	mu     sync.Mutex
	last   Snapshot
	lastAt time.Time
}

// NewView returns a view whose snapshots are built from read's inputs;
// read is called with the view's lock held, never twice at once.
func NewView(read func(ctx context.Context) (SnapshotInput, error)) *View {
	return &View{Hub: NewHub(0, nil), OOMs: NewOOMTracker(), read: read}
}

// Snapshot is the live snapshot, read again when the last one is older
// than CacheFor.
func (v *View) Snapshot(ctx context.Context) (Snapshot, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.lastAt.IsZero() && time.Since(v.lastAt) < CacheFor {
		return v.last, nil
	}
	in, err := v.read(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	v.last, v.lastAt = BuildSnapshot(in), time.Now()
	return v.last, nil
}

// ForgetGone drops the OOM counts of the pods known no longer holds (by
// UID).
func (v *View) ForgetGone(known map[string]bool) {
	for _, uid := range v.OOMs.UIDs() {
		if !known[uid] {
			v.OOMs.Forget(uid)
		}
	}
}
