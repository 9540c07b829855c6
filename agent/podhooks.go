package agent

import (
	"context"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/gc"
	"github.com/kernelet/kernelet/agent/prober"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/status/events"
)

// The pod side's hooks into the prober (agent/prober), the volume manager
// (agent/volume) and the collectors (agent/gc): construction and the
// callbacks between them and the pod workers and sources.

// newCollectors builds the container and image collectors of p
// (gc.NewCollectors; pods' states by gc.PodStates).
func (a *Agent) newCollectors(p *pods, rs internalapi.RuntimeService, is internalapi.ImageManagerService) error {
	var err error
	p.containerGC, p.imageGC, err = gc.NewCollectors(gc.CollectorsConfig{Kubelet: &a.opts.Config.Kubelet,
		ContainerPolicy: a.opts.ContainerGC, Runtime: rs, Images: is,
		PodState:  gc.PodStates{Workers: p.workers, Sources: p.sources}.Of,
		PodImages: func() []string { return gc.SpecImages(p.sources.Pods()) },
		Recorder:  a.recorder, Node: events.NodeRef(a.opts.NodeName), Metrics: a.metrics.imageGC})
	return err
}

// startProbes makes the prober: exec probes through rs, events through
// the pod recorder, results waking the pod's worker; its metrics are m.
func (p *pods) startProbes(rs internalapi.RuntimeService, m *prober.Metrics) error {
	p.probes = prober.New(prober.Config{Metrics: m,
		Exec: rs.ExecSync,
		Event: func(pod *v1.Pod, container, typ, reason, msg string) {
			p.recorder.Event(events.PodRef(pod, container), typ, reason, msg)
		},
		OnChange: func(uid types.UID) {
			p.workers.Wake(uid)
			p.terminatingReadiness(uid)
		},
	})
	return nil
}

// unhealthy is what the prober says of pod's containers, for the sync:
// those that failed their liveness or startup probe.
func (p *pods) unhealthy(pod *v1.Pod) map[string]runtime.Unhealthy {
	failed := p.probes.Unhealthy(pod)
	if len(failed) == 0 {
		return nil
	}
	out := make(map[string]runtime.Unhealthy, len(failed))
	for id, u := range failed {
		out[id] = runtime.Unhealthy{Probe: strings.ToLower(string(u.Kind)), Grace: u.Grace}
	}
	return out
}

// statusInputs are the inputs of pod's API status: started and ready as
// the probes say.
func (p *pods) statusInputs(pod *v1.Pod, waiting map[string]runtime.Waiting) runtime.StatusInputs {
	in := runtime.StatusInputs{Waiting: waiting, HostIPs: p.hostIPs,
		Started: func(_ types.UID, name, id string) bool { return p.probes.Started(pod, name, id) },
		Ready:   func(_ types.UID, name, id string) bool { return p.probes.Ready(pod, name, id) },
	}
	if p.devices != nil {
		in.ResourcesStatus = func(name string) []v1.ResourceStatus {
			return append(p.devices.HealthStatus(pod.UID, name), p.claims.HealthStatus(pod, name)...)
		}
	}
	if p.csiVols != nil {
		in.Rejected = func() (string, string, bool) { return p.csiVols.Rejected(pod.UID) }
		if p.volumeHealth {
			in.VolumeHealth = func() []v1.PodVolumeHealth { return p.csiVols.VolumeHealth(pod.UID) }
		}
	}
	if p.actuated != nil {
		in.Actuated = func(name string) (v1.ResourceRequirements, bool) { return p.actuated.Container(pod.UID, name) }
		if p.alloc.PodLevelStatus() {
			in.PodCgroup = func() cgroups.CgroupSettings { return p.mgr.PodCgroupSettings(pod) }
		}
	}
	return in
}

// terminatingReadiness reports the readiness the probes now say of a pod
// that is terminating (its worker no longer syncs it): as kubelet, a
// readiness probe that fails during the grace period makes the pod not
// Ready.
func (p *pods) terminatingReadiness(uid types.UID) {
	if p.status == nil {
		return
	}
	for _, r := range p.workers.Pods() {
		if r.Pod.UID != uid || !r.Terminating {
			continue
		}
		pod := r.Pod
		st, changed := runtime.WithReadiness(pod, r.Status, p.now(), func(name, id string) bool { return p.probes.Ready(pod, name, id) })
		if changed {
			p.status.SetStatus(pod, st)
		}
	}
}

// newVolumeManager builds the pod volume manager under podsDir (package
// volume; with the API server, its objects also serve env and envFrom).
func (a *Agent) newVolumeManager(podsDir string, allocatable v1.ResourceList) (*volume.Manager, runtime.EnvObjects, error) {
	cfg := volume.Config{PodsDir: podsDir, NodeAllocatable: allocatable}
	if swaps, err := os.ReadFile("/proc/swaps"); err == nil && config.SwapOn(swaps) {
		// Swap is on: memory-backed volumes (secrets among them) are kept
		// off it where the kernel can (tmpfs noswap), as kubelet does.
		noswap := volume.TmpfsNoswapSupported(a.opts.RootDir)
		if !noswap {
			klog.Background().Info("Warning: swap is on and tmpfs has no noswap option on this kernel: memory-backed volumes (secrets, emptyDir medium Memory) may be swapped to disk")
		}
		cfg.Mounter = volume.SystemMounter(noswap)
	}
	if a.clients == nil || a.clients.Main == nil {
		vm, err := volume.NewManager(cfg) // standalone: emptyDir, hostPath, downwardAPI
		return vm, nil, err
	}
	return volume.NewAPIManager(cfg, a.clients.Main, string(a.opts.Config.Kubelet.ConfigMapAndSecretChangeDetectionStrategy))
}

// cleanupVolumes removes the volumes of pods that no source wants, no
// worker runs and the runtime does not hold (listed).
func (p *pods) cleanupVolumes(ctx context.Context, wanted map[types.UID]bool, listed []*runtime.PodStatus) {
	inRuntime := map[types.UID]bool{}
	for _, st := range listed {
		inRuntime[st.UID] = true
	}
	keep := func(uid types.UID) bool { return wanted[uid] || inRuntime[uid] || p.workers.Known(uid) }
	if p.csiVols != nil {
		// The CSI volumes first: NodeUnpublish before the pod dir goes.
		if err := p.csiVols.CleanupOrphans(ctx, keep); err != nil {
			klog.FromContext(ctx).Error(err, "Tearing down the CSI volumes of orphaned pods")
		}
	}
	if err := p.vols.CleanupOrphans(ctx, keep); err != nil {
		klog.FromContext(ctx).Error(err, "Removing volumes of orphaned pods")
	}
}
