package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/internal/imageref"
)

// pulledImage is what ensureImage found: the runtime's image reference and
// the image's user, for runAsNonRoot.
type pulledImage struct {
	ref      string
	uid      *int64
	username string
	size     uint64
}

// ValidImageName checks image as a reference the runtime can pull;
// kubelet's InvalidImageName otherwise.
func ValidImageName(image string) error { return imageref.Validate(image) }

// pulledMessage is kubelet's Pulled event after a pull: the pull's own
// time, the time including the wait for a pull slot, the image size when
// known.
func pulledMessage(image string, pull, total time.Duration, size uint64) string {
	msg := fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting)", image, pull, total)
	if size > 0 {
		msg += fmt.Sprintf(". Image size: %d bytes.", size)
	}
	return msg
}

// PullPolicy is c's imagePullPolicy, defaulted as the API server does
// (imageref.DefaultPullPolicy: Always for the tag latest or none, else
// IfNotPresent) for pods that were not defaulted (static pods).
func PullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	return imageref.DefaultPullPolicy(c.Image)
}

// ensureImage makes c's image present per its pull policy, recording the
// kubelet events in r. On failure it returns the Waiting state to report.
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sbCfg *runtimeapi.PodSandboxConfig, r *SyncResult) (pulledImage, *Waiting, error) {
	return m.ensureImageOf(ctx, pod, imageUse{image: c.Image, policy: PullPolicy(c), container: c.Name}, sbCfg, r)
}

// imageUse is an image to make present: a container's or an image
// volume's, with its pull policy; container names the container the
// events are about ("" for the pod, as kubelet records image volume
// pulls).
type imageUse struct {
	image, container string
	policy           v1.PullPolicy
}

// ensureImageOf makes u's image present per its pull policy, recording
// kubelet's events in r; on failure it returns the Waiting state to report.
func (m *Manager) ensureImageOf(ctx context.Context, pod *v1.Pod, u imageUse, sbCfg *runtimeapi.PodSandboxConfig, r *SyncResult) (pulledImage, *Waiting, error) {
	c := struct{ Image, Name string }{u.image, u.container}
	if err := ValidImageName(c.Image); err != nil {
		w := &Waiting{Reason: ReasonInvalidImageName, Message: fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)}
		r.warnFor(c.Name, EventInspectFailed, w.Message)
		r.warnFor(c.Name, EventFailed, "Error: "+ReasonInvalidImageName)
		return pulledImage{}, w, fmt.Errorf("%s: %w", c.Image, ErrInvalidImageName)
	}
	spec := &runtimeapi.ImageSpec{Image: c.Image, Annotations: map[string]string{}}
	policy := u.policy
	present := func() (pulledImage, bool, error) {
		resp, err := m.is.ImageStatus(ctx, spec, false)
		if err != nil {
			return pulledImage{}, false, err
		}
		img := resp.GetImage()
		if img == nil {
			return pulledImage{}, false, nil
		}
		p := pulledImage{ref: img.GetId(), username: img.GetUsername(), size: img.GetSize()}
		if u := img.GetUid(); u != nil {
			v := u.GetValue()
			p.uid = &v
		}
		return p, true, nil
	}
	if policy != v1.PullAlways {
		p, ok, err := present()
		if err != nil {
			w := &Waiting{Reason: ReasonErrImagePull, Message: fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)}
			r.warnFor(c.Name, EventFailed, w.Message)
			return pulledImage{}, w, fmt.Errorf("image status %s: %w", c.Image, err)
		}
		if ok {
			r.normalFor(c.Name, EventPulled, fmt.Sprintf("Container image %q already present on machine", c.Image))
			return p, nil, nil
		}
		if policy == v1.PullNever {
			w := &Waiting{Reason: ReasonErrImageNeverPull, Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)}
			r.warnFor(c.Name, EventErrImageNeverPull, w.Message)
			r.warnFor(c.Name, EventFailed, "Error: "+ReasonErrImageNeverPull)
			return pulledImage{}, w, fmt.Errorf("%s: %w", c.Image, ErrImageNeverPull)
		}
	}
	if held, msg := m.backoff.PullHeld(pod.UID, c.Image); held {
		w := &Waiting{Reason: ReasonImagePullBackOff, Message: msg}
		r.normalFor(c.Name, EventBackOff, ImagePullBackOffMessage(c.Image))
		r.warnFor(c.Name, EventFailed, "Error: "+ReasonImagePullBackOff)
		return pulledImage{}, w, fmt.Errorf("%s: %w", c.Image, ErrImagePullBackOff)
	}
	r.normalFor(c.Name, EventPulling, fmt.Sprintf("Pulling image %q", c.Image))
	start := m.clock.Now()
	ref, pulling, err := m.pull(ctx, pod, spec, sbCfg, r)
	if err != nil {
		// The event names the image; the waiting message is the runtime's
		// error as it is (kubelet's split).
		w := &Waiting{Reason: ReasonErrImagePull, Message: err.Error()}
		m.backoff.PullFailed(pod.UID, c.Image, w.Reason, w.Message)
		r.warnFor(c.Name, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		r.warnFor(c.Name, EventFailed, "Error: "+ReasonErrImagePull)
		return pulledImage{}, w, fmt.Errorf("pull %s: %w", c.Image, err)
	}
	m.backoff.PullSucceeded()
	total := m.clock.Since(start).Round(time.Millisecond)
	p, ok, err := present()
	if err != nil || !ok {
		p = pulledImage{ref: ref}
	}
	r.normalFor(c.Name, EventPulled, pulledMessage(c.Image, pulling.Round(time.Millisecond), total, p.size))
	return p, nil, nil
}

// pull pulls spec with each credential of the pod's pull secrets that
// applies, most specific first, until one works; anonymously when none
// applies. It waits for a pull slot first (serializeImagePulls,
// maxParallelImagePulls) and returns how long the pull itself took.
func (m *Manager) pull(ctx context.Context, pod *v1.Pod, spec *runtimeapi.ImageSpec, sbCfg *runtimeapi.PodSandboxConfig, r *SyncResult) (string, time.Duration, error) {
	creds, err := PullCredentials(spec.Image, m.pullSecrets(ctx, pod, r))
	if err != nil {
		return "", 0, err
	}
	release, err := m.pulls.acquire(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("waiting for an image pull slot: %w", err)
	}
	defer release()
	start := m.clock.Now()
	if len(creds) == 0 {
		ref, err := m.pullImage(ctx, spec, nil, sbCfg)
		return ref, m.clock.Since(start), err
	}
	var errs []error
	for _, auth := range creds {
		ref, err := m.pullImage(ctx, spec, auth, sbCfg)
		if err == nil {
			return ref, m.clock.Since(start), nil
		}
		errs = append(errs, err)
	}
	return "", m.clock.Since(start), errors.Join(errs...)
}

// ErrPullQPSExceeded is kubelet's error for a pull over registryPullQPS
// and registryBurst: the pull fails (ErrImagePull) and is retried after
// the image pull back-off.
var ErrPullQPSExceeded = errors.New("pull QPS exceeded")

// pullImage asks the runtime for one pull, within registryPullQPS and
// registryBurst (kubelet's throttled image service: a pull over the rate
// fails at once rather than waiting).
func (m *Manager) pullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if m.pullRate != nil && !m.pullRate.TryAccept() {
		return "", ErrPullQPSExceeded
	}
	return m.is.PullImage(ctx, spec, auth, sbCfg)
}

// pullSlots bounds the image pulls that run at once (nil: no bound).
type pullSlots chan struct{}

func newPullSlots(n int) pullSlots {
	if n <= 0 {
		return nil
	}
	return make(pullSlots, n)
}

// acquire waits for a slot (or ctx); release gives it back.
func (s pullSlots) acquire(ctx context.Context) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
