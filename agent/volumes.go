package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/apiobjects"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/volume"
)

// newVolumeManager builds the pod volume manager under podsDir: with the
// API server, configMaps and secrets come per
// configMapAndSecretChangeDetectionStrategy (Watch: one watch per
// referenced object) and tokens from the TokenRequest API; standalone, only emptyDir,
// hostPath and downwardAPI volumes can be set up.
//
// The objects (nil standalone) also serve env and envFrom.
func (a *Agent) newVolumeManager(podsDir string, allocatable v1.ResourceList) (*volume.Manager, runtime.EnvObjects, error) {
	cfg := volume.Config{PodsDir: podsDir, NodeAllocatable: allocatable}
	var vm *volume.Manager
	var objs runtime.EnvObjects
	if a.clients != nil && a.clients.Main != nil {
		strategy := apiobjects.Strategy(a.opts.Config.Kubelet.ConfigMapAndSecretChangeDetectionStrategy)
		om := apiobjects.NewObjectManager(a.clients.Main, strategy, func() {
			if vm != nil {
				vm.Changed()
			}
		})
		cfg.Objects, objs = om, om
		cfg.Tokens = apiobjects.NewTokenManager(a.clients.Main, nil)
	}
	vm, err := volume.NewManager(cfg)
	return vm, objs, err
}

// cleanupVolumes removes the volumes of pods that no source wants, no
// worker runs and the runtime does not hold (listed).
func (p *pods) cleanupVolumes(ctx context.Context, wanted map[types.UID]bool, listed []*runtime.PodStatus) {
	inRuntime := map[types.UID]bool{}
	for _, st := range listed {
		inRuntime[st.UID] = true
	}
	keep := func(uid types.UID) bool { return wanted[uid] || inRuntime[uid] || p.workers.Known(uid) }
	if err := p.vols.CleanupOrphans(ctx, keep); err != nil {
		klog.FromContext(ctx).Error(err, "Removing volumes of orphaned pods")
	}
}
