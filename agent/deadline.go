package agent

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

// deadlines tracks spec.activeDeadlineSeconds of the pods: when each pod
// became active on the node (its status startTime, else what the first
// check here said: its oldest sandbox's creation, or that check's time)
// and which pods went past their deadline.
type deadlines struct {
	mu       sync.Mutex
	started  map[types.UID]time.Time
	exceeded map[types.UID]bool
}

func newDeadlines() *deadlines {
	return &deadlines{started: map[types.UID]time.Time{}, exceeded: map[types.UID]bool{}}
}

// check tells whether pod, active since since unless its status says
// otherwise, is past its active deadline at now (first
// reports it once; a pod past its deadline stays so, even if the deadline
// is raised afterwards, as the pod has been killed) and otherwise how long
// until it is (0: no deadline).
func (d *deadlines) check(pod *v1.Pod, since, now time.Time) (exceeded, first bool, left time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exceeded[pod.UID] {
		return true, false, 0
	}
	start, ok := d.started[pod.UID]
	if pod.Status.StartTime != nil && !pod.Status.StartTime.IsZero() {
		start = pod.Status.StartTime.Time
	} else if !ok {
		start = since
	}
	d.started[pod.UID] = start
	at, ok := runtime.ActiveDeadline(pod, start)
	if !ok {
		return false, false, 0
	}
	if !now.Before(at) {
		d.exceeded[pod.UID] = true
		return true, true, 0
	}
	return false, false, at.Sub(now)
}

// isExceeded tells whether uid went past its deadline.
func (d *deadlines) isExceeded(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.exceeded[uid]
}

func (d *deadlines) forget(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.started, uid)
	delete(d.exceeded, uid)
}
