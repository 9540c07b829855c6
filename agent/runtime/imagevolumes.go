package runtime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/imageref"
)

// ImageVolumesMountable refuses (for admission) a pod's image volumes
// when the runtime cannot mount them (podconfig.ValidateRuntimeFeatures),
// asking the runtime's version only for pods that have one.
func ImageVolumesMountable(ctx context.Context, rs internalapi.RuntimeService) func(*v1.Pod) error {
	return func(pod *v1.Pod) error {
		if !podconfig.HasImageVolumes(pod) {
			return nil
		}
		v, err := rs.Version(ctx, "v1")
		if err != nil {
			return fmt.Errorf("cannot tell whether the runtime mounts image volumes: %w", err)
		}
		return podconfig.ValidateRuntimeFeatures(pod, podconfig.RuntimeFeatures{Name: v.GetRuntimeName(), Version: v.GetRuntimeVersion()})
	}
}

// imageVolumePull is the outcome of pulling one image volume's image.
type imageVolumePull struct {
	spec    *runtimeapi.ImageSpec
	waiting *Waiting
	err     error
}

// imageVolumes are a sync's image volume pulls by volume name.
type imageVolumes map[string]imageVolumePull

// VolumePullPolicy is an image volume's pullPolicy, defaulted as the API
// server does for pods that were not defaulted (static pods).
func VolumePullPolicy(src *v1.ImageVolumeSource) v1.PullPolicy {
	if src.PullPolicy != "" {
		return src.PullPolicy
	}
	return imageref.DefaultPullPolicy(src.Reference)
}

// pullImageVolumes makes the image of each of pod's image volumes
// present, as kubelet does once per sync before any container starts:
// with the volume's pull policy and the pod's pull secrets, the pull's
// events recorded on the pod. A failed pull fails only the containers
// that mount the volume (startable).
func (m *Manager) pullImageVolumes(ctx context.Context, pod *v1.Pod, sbCfg *runtimeapi.PodSandboxConfig, handler string, r *SyncResult) imageVolumes {
	out := imageVolumes{}
	for _, vol := range pod.Spec.Volumes {
		if vol.Image == nil {
			continue
		}
		u := imageUse{image: vol.Image.Reference, policy: VolumePullPolicy(vol.Image)}
		img, w, err := m.ensureImageOf(ctx, pod, u, sbCfg, r)
		if err != nil {
			out[vol.Name] = imageVolumePull{waiting: w, err: err}
			continue
		}
		out[vol.Name] = imageVolumePull{spec: &runtimeapi.ImageSpec{Image: img.ref, UserSpecifiedImage: vol.Image.Reference,
			RuntimeHandler: handler, Annotations: pod.Annotations}}
	}
	return out
}

// specs are the pulled images by volume name, for the container options.
func (iv imageVolumes) specs() map[string]*runtimeapi.ImageSpec {
	if len(iv) == 0 {
		return nil
	}
	out := map[string]*runtimeapi.ImageSpec{}
	for name, p := range iv {
		if p.spec != nil {
			out[name] = p.spec
		}
	}
	return out
}

// startable checks that every image volume c mounts was pulled; for the
// last one that was not it records kubelet's "Error: <reason>" warning
// on c for each failed volume and returns the pull's Waiting state.
func (iv imageVolumes) startable(c *v1.Container, r *SyncResult) (*Waiting, error) {
	var w *Waiting
	var err error
	for _, vm := range c.VolumeMounts {
		p, ok := iv[vm.Name]
		if !ok || p.err == nil {
			continue
		}
		reason := ReasonErrImagePull
		if p.waiting != nil {
			reason = p.waiting.Reason
		}
		r.warnFor(c.Name, EventFailed, "Error: "+reason)
		w, err = p.waiting, fmt.Errorf("image volume %q: %w", vm.Name, p.err)
	}
	return w, err
}
