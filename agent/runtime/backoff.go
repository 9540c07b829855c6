package runtime

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// BackoffKey identifies a container of a pod whose restarts are backed off,
// with its image as kubelet keys it (the spec hash of name and image): a
// container whose image changed starts its CrashLoopBackOff over.
type BackoffKey struct {
	UID   types.UID
	Name  string
	Image string
}

// ContainerBackoffKey is the key of spec container c of pod.
func ContainerBackoffKey(pod *v1.Pod, c *v1.Container) BackoffKey {
	return BackoffKey{UID: pod.UID, Name: c.Name, Image: c.Image}
}

// String is the key's flowcontrol id.
func (k BackoffKey) String() string { return string(k.UID) + "_" + k.Name + "_" + k.Image }

// Backoff is kubelet's two back-offs, both client-go's flowcontrol.Backoff
// (10 s doubling to 300 s, no jitter) as kubelet builds them:
//
//   - CrashLoopBackOff, per container: a container that exited is restarted
//     at once the first time; each restart (Restarted, called before the
//     container is pulled, created and started, failed or not) moves the
//     delay on, so the next exit waits 10 s, then 20 s, ... 300 s, counted
//     from the exit. An exit more than 10 minutes after the last restart
//     starts over (kubelet's HasExpiredFunc: the container ran cleanly).
//   - ImagePullBackOff, per pod and image: every failed pull moves the delay
//     on; a pull is refused while less than the delay has passed since the
//     last failure. The default expiry: 2×300 s after the last failure the
//     delay starts over.
//
// Expired entries are collected by GC at housekeeping and, for pulls, after
// each successful pull (kubelet's). It is safe for concurrent use.
type Backoff struct {
	crash *flowcontrol.Backoff
	image *flowcontrol.Backoff

	// pullErrs is the last pull error of each backed-off image key, which
	// the ImagePullBackOff waiting message repeats (kubelet's).
	mu       sync.Mutex
	pullErrs map[string]string
}

// NewBackoff returns kubelet's back-offs on clk; nil means the real clock.
func NewBackoff(clk clock.Clock) *Backoff { return NewBackoffWith(clk, BackoffInitial, BackoffMax) }

// NewBackoffWith is NewBackoff with the CrashLoopBackOff's initial delay
// and cap (crashLoopBackOff.maxContainerRestartPeriod,
// ReduceDefaultCrashLoopBackOffDecay: CrashLoopBackOffDelays).
func NewBackoffWith(clk clock.Clock, crashInitial, crashMax time.Duration) *Backoff {
	if clk == nil {
		clk = clock.RealClock{}
	}
	crash := flowcontrol.NewBackOff(crashInitial, crashMax)
	crash.Clock = clk
	crash.HasExpiredFunc = func(exit, lastRestart time.Time, _ time.Duration) bool {
		return exit.Sub(lastRestart) > BackoffReset
	}
	image := flowcontrol.NewBackOff(BackoffInitial, BackoffMax)
	image.Clock = clk
	return &Backoff{crash: crash, image: image, pullErrs: map[string]string{}}
}

// Held tells whether the restart of the container k, whose newest instance
// exited at exit, must still wait (at the back-off's clock), and the delay
// that applies (kubelet's IsInBackOffSince and Get).
func (b *Backoff) Held(k BackoffKey, exit time.Time) (bool, time.Duration) {
	id := k.String()
	return b.crash.IsInBackOffSince(id, exit), b.crash.Get(id)
}

// Restarted records that the container k, whose newest instance exited at
// exit, is being restarted: the next exit waits longer, or the delay starts
// over when exit came more than 10 minutes after the last restart.
func (b *Backoff) Restarted(k BackoffKey, exit time.Time) {
	b.crash.Next(k.String(), exit)
}

// imageKey is the back-off id of pulls of image for pod uid (kubelet's).
func imageKey(uid types.UID, image string) string { return string(uid) + "_" + image }

// PullHeld tells whether a pull of image for pod uid must still wait, with
// the waiting message of ImagePullBackOff: kubelet's text followed by the
// last pull error.
func (b *Backoff) PullHeld(uid types.UID, image string) (bool, string) {
	key := imageKey(uid, image)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.image.IsInBackOffSinceUpdate(key, b.image.Clock.Now()) {
		delete(b.pullErrs, key)
		return false, ""
	}
	msg := ImagePullBackOffMessage(image)
	if e, ok := b.pullErrs[key]; ok {
		msg += ": " + e
	}
	return true, msg
}

// PullFailed records a failed pull of image for pod uid, with the reason
// and message of its ErrImagePull state.
func (b *Backoff) PullFailed(uid types.UID, image, reason, message string) {
	key := imageKey(uid, image)
	b.image.Next(key, b.image.Clock.Now())
	b.mu.Lock()
	b.pullErrs[key] = reason + ": " + message
	b.mu.Unlock()
}

// PullSucceeded collects the expired pull back-offs (kubelet does after
// every successful pull).
func (b *Backoff) PullSucceeded() { b.gcPulls() }

// gcPulls drops the pull back-offs that expired, and their errors.
func (b *Backoff) gcPulls() {
	b.image.GC()
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.pullErrs {
		if b.image.Get(key) == 0 {
			delete(b.pullErrs, key)
		}
	}
}

// GC drops the crash-loop entries of containers whose last restart was
// more than 10 minutes ago: they can no longer delay anything (kubelet
// collects them at every housekeeping). Expired pull back-offs go too
// (kubelet only collects them after a successful pull; an expired one no
// longer holds a pull, so nothing else changes), so that pods that are
// gone leave nothing behind.
func (b *Backoff) GC() {
	b.crash.GC()
	b.gcPulls()
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

// ImagePullBackOffMessage is the BackOff event of a container whose image
// pull is backed off, and the start of its Waiting message (kubelet's text).
func ImagePullBackOffMessage(image string) string {
	return fmt.Sprintf("Back-off pulling image %q", image)
}

// CrashLoopBackOffDelays are the initial delay and the cap of the
// CrashLoopBackOff as kubelet v1.37 sets them: 10 s to 300 s; 1 s to 60 s
// with ReduceDefaultCrashLoopBackOffDecay; the cap maxRestartPeriod when
// set (KubeletCrashLoopBackOffMax), the initial delay never above it.
func CrashLoopBackOffDelays(reducedDecay bool, maxRestartPeriod time.Duration) (initial, capped time.Duration) {
	initial, capped = BackoffInitial, BackoffMax
	if reducedDecay {
		initial, capped = time.Second, 60*time.Second
	}
	if maxRestartPeriod > 0 {
		capped = maxRestartPeriod
		initial = min(initial, capped)
	}
	return initial, capped
}
