package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/userns"
)

// newUserNamespaces builds the user namespace ranges of hostUsers: false
// pods over podsDir from userNamespaces.idsPerPod and maxPods.
func (a *Agent) newUserNamespaces(ctx context.Context, podsDir string) (*userns.Manager, error) {
	kc := &a.opts.Config.Kubelet
	var ids uint32
	if u := kc.UserNamespaces; u != nil && u.IDsPerPod != nil {
		ids = uint32(*u.IDsPerPod) // validated: a multiple of 65536 below 2^32
	}
	return userns.Open(ctx, podsDir, ids, int(kc.MaxPods))
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
