package volumemanager

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kubelet's event reasons of node expansion.
const (
	EventFileSystemResizeSuccessful = "FileSystemResizeSuccessful"
	EventFileSystemResizeFailed     = "FileSystemResizeFailed"
	EventVolumeResizeFailed         = "VolumeResizeFailed"
)

// resizeFlow is how a volume's node expansion goes.
type resizeFlow int

const (
	// resizeNone: nothing to expand, or the resizer does not let the
	// node expand yet (allocatedResourceStatuses not NodeResizePending or
	// NodeResizeInProgress).
	resizeNone resizeFlow = iota
	// resizeReadOnly: the pod mounts its claim read-only; kubelet reports
	// FileSystemResizeFailed and does not expand.
	resizeReadOnly
	// resizeLegacy: a resizer that records neither allocatedResources nor
	// allocatedResourceStatuses (kubelet's flow for an older
	// external-resizer).
	resizeLegacy
	// resizeRecovery: RecoverVolumeExpansionFailure's flow (GA): the node
	// marks NodeResizeInProgress, expands, and clears the status or
	// records NodeResizeError / NodeResizeInfeasible.
	resizeRecovery
)

// resizeState is what kernelet keeps of a volume's expansion, as
// kubelet's actual state of the world: the size it knows the volume has
// (the PVC's status capacity when first seen, then each size it expanded
// to), whether the last expansion failed with a final error, and whether
// the driver refused to expand it online (FailedPrecondition: not tried
// again while mounted).
type resizeState struct {
	claimSize      resource.Quantity
	failedFinal    bool
	noOnlineExpand bool
}

// resizePlan is a volume's node expansion, decided from its PVC and PV.
type resizePlan struct {
	flow             resizeFlow
	oldSize, newSize resource.Quantity
	// alreadyUpdated: the PVC already shows the new size (expanded from
	// another node): the driver is called, the PVC left alone.
	alreadyUpdated bool
	// markInfeasible: the claim's request changed since an expansion
	// failed with a final error; the next failure is NodeResizeInfeasible.
	markInfeasible bool
}

// planResize is kubelet's decision whether and how a published volume is
// expanded on the node: the PV's capacity above the size the node knows
// (claimSize), not for a claim the pod mounts read-only, and in the
// recovery flow only when the resizer left the storage resource's status
// NodeResizePending or NodeResizeInProgress.
func planResize(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, claimReadOnly bool, st resizeState) resizePlan {
	p := resizePlan{oldSize: st.claimSize, newSize: pv.Spec.Capacity[v1.ResourceStorage]}
	if p.newSize.Cmp(p.oldSize) <= 0 {
		return p
	}
	if claimReadOnly {
		p.flow = resizeReadOnly
		return p
	}
	resizeStatus := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]
	if resizeStatus == "" && pvc.Status.AllocatedResources == nil {
		p.flow = resizeLegacy
		return p
	}
	request := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	p.markInfeasible = request.Cmp(p.newSize) != 0 && st.failedFinal
	statusCap := pvc.Status.Capacity[v1.ResourceStorage]
	switch {
	case statusCap.Cmp(p.newSize) >= 0 && resizeStatus == "":
		p.flow, p.alreadyUpdated = resizeRecovery, true
	case resizeStatus == v1.PersistentVolumeClaimNodeResizePending || resizeStatus == v1.PersistentVolumeClaimNodeResizeInProgress:
		p.flow = resizeRecovery
	}
	return p
}

// resizeConditions are the PVC condition types of expansion, which
// kubelet replaces (the others it keeps).
var resizeConditions = map[v1.PersistentVolumeClaimConditionType]bool{
	v1.PersistentVolumeClaimFileSystemResizePending: true,
	v1.PersistentVolumeClaimResizing:                true,
	v1.PersistentVolumeClaimControllerResizeError:   true,
	v1.PersistentVolumeClaimNodeResizeError:         true,
}

// withResizeConditions returns conds with the resize conditions set to
// want: the non-resize ones kept, a resize condition of want's type kept
// as it is when its status did not change, the other resize ones kept
// only with keepOld, then want's new ones appended.
func withResizeConditions(conds []v1.PersistentVolumeClaimCondition, want []v1.PersistentVolumeClaimCondition, keepOld bool) []v1.PersistentVolumeClaimCondition {
	out := []v1.PersistentVolumeClaimCondition{}
	done := map[v1.PersistentVolumeClaimConditionType]bool{}
	for _, c := range conds {
		if !resizeConditions[c.Type] {
			out = append(out, c)
			continue
		}
		if i := conditionIndex(want, c.Type); i >= 0 {
			if want[i].Status != c.Status {
				c = want[i]
			}
			out = append(out, c)
			done[c.Type] = true
		} else if keepOld {
			out = append(out, c)
		}
	}
	for _, w := range want {
		if !done[w.Type] {
			out = append(out, w)
		}
	}
	return out
}

func conditionIndex(conds []v1.PersistentVolumeClaimCondition, t v1.PersistentVolumeClaimConditionType) int {
	for i, c := range conds {
		if c.Type == t {
			return i
		}
	}
	return -1
}

// withStorageStatus returns a copy of pvc whose storage resize status is
// s ("" removes it; an empty map becomes nil, as kubelet leaves it).
func withStorageStatus(pvc *v1.PersistentVolumeClaim, s v1.ClaimResourceStatus) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	if s == "" {
		delete(out.Status.AllocatedResourceStatuses, v1.ResourceStorage)
		if len(out.Status.AllocatedResourceStatuses) == 0 {
			out.Status.AllocatedResourceStatuses = nil
		}
		return out
	}
	if out.Status.AllocatedResourceStatuses == nil {
		out.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{}
	}
	out.Status.AllocatedResourceStatuses[v1.ResourceStorage] = s
	return out
}

// resizeFinished is the PVC once its volume is expanded on the node:
// capacity newSize, no storage resize status, no resize condition.
func resizeFinished(pvc *v1.PersistentVolumeClaim, newSize resource.Quantity) *v1.PersistentVolumeClaim {
	out := withStorageStatus(pvc, "")
	if out.Status.Capacity == nil {
		out.Status.Capacity = v1.ResourceList{}
	}
	out.Status.Capacity[v1.ResourceStorage] = newSize
	out.Status.Conditions = withResizeConditions(out.Status.Conditions, nil, false)
	return out
}

// resizeFailed is the PVC after a node expansion failed with a final
// error: the NodeResizeError condition (kubelet's message) and, when
// infeasible, the NodeResizeInfeasible status.
func resizeFailed(pvc *v1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	if infeasible {
		out = withStorageStatus(out, v1.PersistentVolumeClaimNodeResizeInfeasible)
	}
	cond := v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimNodeResizeError, Status: v1.ConditionTrue,
		LastTransitionTime: now, Message: fmt.Sprintf("failed to expand pvc with %v", err)}
	out.Status.Conditions = withResizeConditions(out.Status.Conditions, []v1.PersistentVolumeClaimCondition{cond}, true)
	return out
}

// expandError is a failed NodeExpandVolume: infeasible (InvalidArgument,
// OutOfRange, NotFound), inUse (FailedPrecondition: the driver cannot
// expand the volume while it is published) or not supported (no
// EXPAND_VOLUME node capability), with kubelet's message.
type expandError struct {
	err                            error
	infeasible, inUse, unsupported bool
}

func (e *expandError) Error() string { return e.err.Error() }
func (e *expandError) Unwrap() error { return e.err }

// classifyExpandError wraps a driver's NodeExpandVolume error in
// kubelet's words.
func classifyExpandError(err error) *expandError {
	e := &expandError{err: fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", err)}
	switch status.Code(err) {
	case codes.FailedPrecondition:
		e.inUse = true
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
		e.infeasible = true
	}
	return e
}
