package agent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/agent/userns"
)

// newUserNamespaces builds the user namespace ranges of hostUsers: false
// pods over podsDir: userNamespaces.idsPerPod, the node's IDs (getsubids
// of the user "kubelet", or kubelet's default), maxPods; the allocations
// kept by an earlier run are read back.
func (a *Agent) newUserNamespaces(ctx context.Context, podsDir string) (*userns.Manager, error) {
	kc := &a.opts.Config.Kubelet
	var ids uint32
	if u := kc.UserNamespaces; u != nil && u.IDsPerPod != nil {
		ids = uint32(*u.IDsPerPod) // validated: a multiple of 65536 below 2^32
	}
	per := ids
	if per == 0 {
		per = userns.DefaultIDsPerPod
	}
	first, length, err := userns.NodeIDs(ctx, per)
	if err != nil {
		return nil, err
	}
	m, err := userns.New(userns.Config{PodsDir: podsDir, IDsPerPod: ids, FirstID: first, Length: length, MaxPods: int(kc.MaxPods)})
	if err != nil {
		return nil, err
	}
	if n := m.InUse(); n > 0 {
		klog.FromContext(ctx).Info("User namespace ranges kept from before", "pods", n, "idsPerPod", m.IDsPerPod())
	}
	return m, nil
}

// cleanupUserNamespaces releases the ranges of pods that no source wants,
// no worker runs and the runtime does not hold.
func (p *pods) cleanupUserNamespaces(ctx context.Context, wanted map[types.UID]bool, listed []*runtime.PodStatus) {
	inRuntime := map[types.UID]bool{}
	for _, st := range listed {
		inRuntime[st.UID] = true
	}
	keep := func(uid types.UID) bool { return wanted[uid] || inRuntime[uid] || p.workers.Known(uid) }
	if err := p.userns.Cleanup(keep); err != nil {
		klog.FromContext(ctx).Error(err, "Releasing user namespaces of pods that are gone")
	}
}

// imageVolumeAdmission refuses image volumes the runtime cannot mount
// (podconfig.ValidateRuntimeFeatures), asking the runtime's version only
// for pods that have one.
func imageVolumeAdmission(ctx context.Context, rs internalapi.RuntimeService) podworkers.AdmitHandler {
	return podworkers.Validate(func(pod *v1.Pod) error {
		if !podconfig.HasImageVolumes(pod) {
			return nil
		}
		v, err := rs.Version(ctx, "v1")
		if err != nil {
			return fmt.Errorf("cannot tell whether the runtime mounts image volumes: %w", err)
		}
		return podconfig.ValidateRuntimeFeatures(pod, podconfig.RuntimeFeatures{Name: v.GetRuntimeName(), Version: v.GetRuntimeVersion()})
	})
}
