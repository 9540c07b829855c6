package runtime

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// BackoffKey identifies what is backed off: a container of a pod, or (Name
// "image:<image>") an image pull of a pod.
type BackoffKey struct {
	UID  types.UID
	Name string
}

// imageKey is the back-off key of pulls of image for pod uid.
func imageKey(uid types.UID, image string) BackoffKey {
	return BackoffKey{UID: uid, Name: imageKeyPrefix + image}
}

const imageKeyPrefix = "image:"

func (k BackoffKey) isImage() bool { return strings.HasPrefix(k.Name, imageKeyPrefix) }

// Backoff is kubelet's CrashLoopBackOff bookkeeping: a container that
// exited for the first time is restarted at once; after its next exit it
// waits Initial, twice as long before each further restart, at most Max; a
// container that ran at least Reset before exiting starts over (restarted
// at once). The same type paces image pulls, where the first retry already
// waits Initial (kubelet's ErrImagePull, then ImagePullBackOff). It is safe
// for concurrent use.
type Backoff struct {
	Initial, Max, Reset time.Duration

	clock   clock.PassiveClock
	mu      sync.Mutex
	entries map[BackoffKey]*backoffEntry
}

type backoffEntry struct {
	// delay is the delay that was waited before the last restart (or
	// pull); exit the exit (or failure) time it answered.
	delay time.Duration
	exit  time.Time
	// touched is when the entry last changed, for GC.
	touched time.Time
}

// NewBackoff returns kubelet's back-off (10 s doubling to 300 s, reset
// after 10 min of running) on clk; nil means the real clock.
func NewBackoff(clk clock.PassiveClock) *Backoff {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Backoff{Initial: BackoffInitial, Max: BackoffMax, Reset: BackoffReset, clock: clk,
		entries: map[BackoffKey]*backoffEntry{}}
}

// Delay is how long to wait after exit (a container's finish time, or a
// failed pull) before restarting, for a run that began at started (zero:
// unknown, e.g. a pull). It does not change the state.
func (b *Backoff) Delay(k BackoffKey, started, exit time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.delayLocked(k, started, exit)
}

func (b *Backoff) delayLocked(k BackoffKey, started, exit time.Time) time.Duration {
	e := b.entries[k]
	first := time.Duration(0)
	if k.isImage() {
		first = b.Initial
	}
	switch {
	case e == nil:
		return first
	case !started.IsZero() && exit.Sub(started) >= b.Reset:
		return first
	case exit.Equal(e.exit):
		return e.delay
	case e.delay == 0:
		return b.Initial
	}
	return min(2*e.delay, b.Max)
}

// Held tells whether a restart after exit must still wait at now, and the
// delay that applies.
func (b *Backoff) Held(k BackoffKey, started, exit, now time.Time) (bool, time.Duration) {
	d := b.Delay(k, started, exit)
	return now.Sub(exit) < d, d
}

// Restarted records that the container (or pull) that exited (failed) at
// exit is being retried, so the next exit waits longer.
func (b *Backoff) Restarted(k BackoffKey, started, exit time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.delayLocked(k, started, exit)
	b.entries[k] = &backoffEntry{delay: d, exit: exit, touched: b.clock.Now()}
}

// Forget drops the state of every key of pod uid (the pod is gone).
func (b *Backoff) Forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if k.UID == uid {
			delete(b.entries, k)
		}
	}
}

// GC drops entries untouched for longer than twice Max plus Reset: they
// can no longer delay anything.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for k, e := range b.entries {
		if now.Sub(e.touched) > 2*b.Max+b.Reset {
			delete(b.entries, k)
		}
	}
}

// Len is the number of keys with state.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// podFullName is kubelet's <name>_<namespace>(<uid>) form used in messages.
func podFullName(name, namespace string, uid types.UID) string {
	return fmt.Sprintf("%s_%s(%s)", name, namespace, uid)
}

// CrashLoopMessage is the Waiting message of a container held by
// CrashLoopBackOff (kubelet's text).
func CrashLoopMessage(delay time.Duration, container, podName, podNamespace string, uid types.UID) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, container, podFullName(podName, podNamespace, uid))
}

// BackOffEventMessage is the message of the BackOff event of a container
// held by CrashLoopBackOff (kubelet's text).
func BackOffEventMessage(container, podName, podNamespace string, uid types.UID) string {
	return fmt.Sprintf("Back-off restarting failed container %s in pod %s", container, podFullName(podName, podNamespace, uid))
}

// ImagePullBackOffMessage is the Waiting message (and BackOff event) of a
// container whose image pull is backed off (kubelet's text).
func ImagePullBackOffMessage(image string) string {
	return fmt.Sprintf("Back-off pulling image %q", image)
}
