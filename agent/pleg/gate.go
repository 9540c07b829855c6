package pleg

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

// Gate tells which lifecycle events need their pod's worker. A sync that
// ends with nothing left to do records the runtime status it read
// (settled) and when that read started; an event that finds the pod in
// the cache as it was settled wakes no worker: the change it reports is
// one the sync made and then saw (a sandbox it ran, a container it
// started). An event that arrives while the pod's sync runs is held until
// the sync ends and then judged against what the sync settled: it wakes
// the worker only when the cache holds another state read after the
// sync's read (a change the sync did not see) or nothing was settled. A
// relist that started before the sync's read and so shows an older state
// is no reason to sync again: the next relist reports any change after
// it.
type Gate struct {
	get  func(types.UID) (*runtime.PodStatus, time.Time)
	mu   sync.Mutex
	pods map[types.UID]*gateEntry
}

type gateEntry struct {
	settled *runtime.PodStatus
	readAt  time.Time
	syncing bool
	held    bool // an event came while syncing
}

// NewGate returns a gate that reads the pods' latest statuses with get
// (the PLEG's Cache.Get).
func NewGate(get func(types.UID) (*runtime.PodStatus, time.Time)) *Gate {
	return &Gate{get: get, pods: map[types.UID]*gateEntry{}}
}

// Begin says that a sync of uid starts: what it settled before no longer
// holds, and events wait for its end.
func (g *Gate) Begin(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.pods[uid]
	if e == nil {
		e = &gateEntry{}
		g.pods[uid] = e
	}
	e.settled, e.syncing = nil, true
}

// End says that the sync of uid ended, settled at st as read from readAt
// on (st nil: the sync left something to do, or failed). It tells whether
// an event held during the sync needs another sync.
func (g *Gate) End(uid types.UID, st *runtime.PodStatus, readAt time.Time) (wake bool) {
	g.mu.Lock()
	e := g.pods[uid]
	if e == nil { // forgotten while it synced
		g.mu.Unlock()
		return false
	}
	e.settled, e.readAt, e.syncing = st, readAt, false
	held := e.held
	e.held = false
	g.mu.Unlock()
	if !held {
		return false
	}
	if st == nil {
		return true
	}
	cached, at := g.get(uid)
	return !runtime.SameState(st, cached) && at.After(readAt)
}

// Event tells whether a lifecycle event of uid needs its worker now. An
// event during a sync is held for End.
func (g *Gate) Event(uid types.UID) (wake bool) {
	g.mu.Lock()
	e := g.pods[uid]
	if e != nil && e.syncing {
		e.held = true
		g.mu.Unlock()
		return false
	}
	if e == nil || e.settled == nil {
		g.mu.Unlock()
		return true
	}
	settled := e.settled
	g.mu.Unlock()
	cached, _ := g.get(uid)
	return !runtime.SameState(settled, cached)
}

// Unsettle forgets what uid's last sync settled: its worker stops or
// kills it.
func (g *Gate) Unsettle(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.pods[uid]; e != nil {
		e.settled = nil
	}
}

// Forget drops uid.
func (g *Gate) Forget(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pods, uid)
}
