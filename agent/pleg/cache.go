package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

// Cache holds the latest runtime status of each pod and when it was read
// (a relist's start or a runtime event's creation).
// A relist that saw no trace of a pod still vouches for it: the global
// timestamp moves forward with every successful relist.
type Cache struct {
	mu      sync.Mutex
	pods    map[types.UID]cacheEntry
	global  time.Time
	changed chan struct{}
}

type cacheEntry struct {
	status *runtime.PodStatus
	at     time.Time
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{pods: map[types.UID]cacheEntry{}, changed: make(chan struct{})}
}

// Set records status of uid as read at t.
func (c *Cache) Set(uid types.UID, st *runtime.PodStatus, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.at.After(t) {
		return
	}
	c.pods[uid] = cacheEntry{status: st, at: t}
	c.notifyLocked()
}

// Delete forgets uid.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// UpdateTime says that everything the runtime held at t is in the cache.
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.global) {
		c.global = t
		c.notifyLocked()
	}
}

func (c *Cache) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Get returns the cached status of uid (an empty status when the runtime
// holds nothing of it) and its time.
func (c *Cache) Get(uid types.UID) (*runtime.PodStatus, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(uid)
}

func (c *Cache) getLocked(uid types.UID) (*runtime.PodStatus, time.Time) {
	e, ok := c.pods[uid]
	if !ok {
		return &runtime.PodStatus{UID: uid}, c.global
	}
	if c.global.After(e.at) {
		return e.status, c.global
	}
	return e.status, e.at
}

// GetNewerThan waits until the cache holds a status of uid read after t,
// then returns it; it fails when ctx is done first.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, t time.Time) (*runtime.PodStatus, error) {
	for {
		c.mu.Lock()
		st, at := c.getLocked(uid)
		ch := c.changed
		c.mu.Unlock()
		if at.After(t) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}
