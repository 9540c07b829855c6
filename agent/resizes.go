package agent

import (
	"context"
	"errors"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/allocation"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/podutil"
)

// openAllocationStores opens the checkpoints of in-place resize under the
// root directory: what each pod was allocated and what its containers
// were given. A corrupt checkpoint is logged and started afresh (the pods
// are then admitted again at their spec's requirements), as kubelet does.
func openAllocationStores(ctx context.Context, rootDir string) (allocated, actuated *allocation.Store) {
	open := func(name string) *allocation.Store {
		s, err := allocation.OpenStore(filepath.Join(rootDir, name))
		if err != nil {
			klog.FromContext(ctx).Error(err, "Starting with an empty checkpoint")
			if rerr := s.Reset(); rerr != nil {
				klog.FromContext(ctx).Error(rerr, "Resetting the checkpoint")
			}
		}
		return s
	}
	return open(allocation.AllocatedStateFile), open(allocation.ActuatedStateFile)
}

// newAllocation builds the allocation manager on the pod side: resizes
// are admitted by the node's admit handlers against the other active
// pods, and a pod whose allocation or resize conditions change is synced;
// podLevelResize is InPlacePodLevelResourcesVerticalScaling.
func (p *pods) newAllocation(allocated *allocation.Store, admit []podworkers.AdmitHandler, metrics *allocation.Metrics, podLevelResize bool) {
	p.alloc = allocation.NewManager(allocation.Config{
		Allocated: allocated, Metrics: metrics, NoPodLevelResize: !podLevelResize,
		SwapBehavior: func(pod *v1.Pod, c *v1.Container) string {
			o := p.syncOpt.Container
			return podconfig.ContainerSwapBehavior(pod, c, o.Swap, o.CgroupV2)
		},
		Admit: func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
			for _, msg := range []string{p.cpus.ResizeInfeasible(pod, p.allocated(pod)), p.mem.ResizeInfeasible(pod, p.allocated(pod))} {
				if msg != "" { // the static CPU and memory policies'
					return false, v1.PodReasonInfeasible, msg
				}
			}
			r := podworkers.Admit(admit, podworkers.AdmitAttributes{Pod: pod, OtherPods: others})
			return r.Admit, r.Reason, r.Message
		},
		ActivePods: p.admittedPods,
		Wake:       func(uid types.UID) { p.workers.Wake(uid) },
		Record: func(pod *v1.Pod, typ, reason, msg string) {
			p.recordEvents(pod, []runtime.Event{{Type: typ, Reason: reason, Message: msg}})
		},
	})
}

// admittedPods are the admitted pods that still run (synced yet or not),
// as their sources last gave them.
func (p *pods) admittedPods() []*v1.Pod { return p.workers.Admitted() }

// allocated is pod at its allocated requirements.
func (p *pods) allocated(pod *v1.Pod) *v1.Pod {
	if p.alloc == nil {
		return pod
	}
	return p.alloc.Allocated(pod)
}

// allocGeneration changes whenever uid's allocation changes (0 without
// an allocation manager).
func (p *pods) allocGeneration(uid types.UID) uint64 {
	if p.alloc == nil {
		return 0
	}
	return p.alloc.PodGeneration(uid)
}

// beginResize hands the allocation manager a pod about to be synced (a
// resize it asks for is allocated or left pending) and returns the pod at
// its allocated requirements.
func (p *pods) beginResize(ctx context.Context, pod *v1.Pod) *v1.Pod {
	if p.alloc == nil {
		return pod
	}
	p.alloc.Conditions().Backfill(pod)
	p.alloc.Sync(ctx, pod)
	return p.alloc.Allocated(pod)
}

// endResize takes the outcome of a sync of pod (allocated) into its
// resize conditions and adds them to its status.
func (p *pods) endResize(pod *v1.Pod, st *runtime.PodStatus, r *runtime.SyncResult, out v1.PodStatus) v1.PodStatus {
	if p.alloc == nil {
		return out
	}
	if podutil.IsTerminal(out.Phase) {
		p.alloc.Terminal(pod)
		return out
	}
	errMsg, resized := "", false
	if r != nil {
		for _, s := range r.Steps {
			if s.Action == runtime.ActionResize {
				resized = true
				if s.Err != nil {
					errMsg = s.Err.Error()
				}
			}
		}
	}
	if resized {
		p.resizeMetrics.ObserveResize(r.ResizeTook, errMsg == "")
	}
	p.alloc.Actuated(pod, p.mgr.ResizeInProgress(pod, st), errMsg)
	out.Conditions = append(out.Conditions, p.alloc.Conditions().List(pod.UID)...)
	return out
}

// forgetAllocation drops a pod that is gone from both checkpoints.
func (p *pods) forgetAllocation(ctx context.Context, pod *v1.Pod) {
	if p.alloc == nil {
		return
	}
	p.alloc.Forget(ctx, pod.UID)
	if err := p.actuated.Remove(pod.UID); err != nil && !errors.Is(err, context.Canceled) {
		klog.FromContext(ctx).Error(err, "Removing the pod's actuated resources", "podUID", pod.UID)
	}
}

// cleanupAllocations drops from both checkpoints the pods that no source
// wants and no worker runs (pods removed while the agent was down).
func (p *pods) cleanupAllocations(ctx context.Context, wanted map[types.UID]bool) {
	if p.alloc == nil {
		return
	}
	keep := func(uid types.UID) bool { return wanted[uid] || p.workers.Known(uid) }
	p.alloc.Keep(ctx, keep)
	if p.devices != nil {
		p.devices.Keep(func(uid string) bool { return keep(types.UID(uid)) })
	}
	if err := p.actuated.Keep(keep); err != nil {
		klog.FromContext(ctx).Error(err, "Removing actuated resources of pods that are gone")
	}
}
