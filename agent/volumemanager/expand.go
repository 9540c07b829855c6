package volumemanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/csi"
)

// expandOnline is kubelet's expansion of a volume in use: a failure is a
// VolumeResizeFailed warning on the pod and is tried again at the next
// sync; the pod keeps running.
func (m *Manager) expandOnline(ctx context.Context, pod *v1.Pod, vol v1.Volume, spec volumeSpec, paths volumePaths) {
	if err := m.expand(ctx, pod, vol, spec, paths, true); err != nil {
		msg := fmt.Sprintf("NodeExpandVolume.NodeExpandVolume failed for volume %q : %v", spec.PVName, err)
		klog.FromContext(ctx).Error(err, "Expanding a volume in use failed", "pod", klog.KObj(pod), "volume", spec.Unique())
		m.event(pod, v1.EventTypeWarning, EventVolumeResizeFailed, msg)
	}
}

// expandAtMount is kubelet's expansion right after a volume is published
// for a pod: a failure fails the mount ("MountVolume.Setup failed while
// expanding volume"), which is tried again.
func (m *Manager) expandAtMount(ctx context.Context, pod *v1.Pod, vol v1.Volume, spec volumeSpec, paths volumePaths) error {
	if err := m.expand(ctx, pod, vol, spec, paths, false); err != nil {
		return fmt.Errorf("MountVolume.Setup failed while expanding volume for volume %q : %w", spec.PVName, err)
	}
	return nil
}

// expand expands one published claim volume of pod on the node when its
// PV grew beyond the size the node knows (planResize), updating the PVC's
// status and recording kubelet's events; online: the volume was already
// in use (a driver that refused online expansion is not asked again).
func (m *Manager) expand(ctx context.Context, pod *v1.Pod, vol v1.Volume, spec volumeSpec, paths volumePaths, online bool) error {
	if spec.Inline || m.cfg.Client == nil {
		return nil
	}
	claim, _, _ := claimOf(pod, vol)
	pvc, err := m.cfg.Client.PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("mountVolume.NodeExpandVolume get PVC failed : %w", err)
	}
	pv, err := m.cfg.Client.PersistentVolumes().Get(ctx, spec.PVName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("mountVolume.NodeExpandVolume get PV failed : %w", err)
	}
	u := spec.Unique()
	l := m.volumeLock(u)
	l.Lock()
	defer l.Unlock()
	st := m.resizeStateOf(u, pvc)
	if online && st.noOnlineExpand {
		return nil
	}
	plan := planResize(pvc, pv, spec.ClaimReadOnly, st)
	var done bool
	switch plan.flow {
	case resizeNone:
		return nil
	case resizeReadOnly:
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", spec.PVName)
		m.event(pod, v1.EventTypeWarning, EventFileSystemResizeFailed, msg)
		m.event(pvc, v1.EventTypeWarning, EventFileSystemResizeFailed, msg)
		done = true
	case resizeLegacy:
		done, err = m.expandLegacy(ctx, pod, spec, paths, pvc, plan)
	case resizeRecovery:
		done, err = m.expandRecovery(ctx, pod, spec, paths, pvc, plan)
	}
	if done && err == nil {
		m.mu.Lock()
		m.resize[u].claimSize = plan.newSize
		m.mu.Unlock()
	}
	return err
}

// resizeStateOf is the volume's expansion state, its known size taken
// from the PVC's status capacity when first seen (kubelet's
// InitializeClaimSize); the caller holds the volume's lock.
func (m *Manager) resizeStateOf(u v1.UniqueVolumeName, pvc *v1.PersistentVolumeClaim) resizeState {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.resize[u]
	if st == nil {
		st = &resizeState{claimSize: pvc.Status.Capacity[v1.ResourceStorage]}
		m.resize[u] = st
	}
	return *st
}

// expandLegacy is kubelet's flow for a resizer that records no
// allocatedResourceStatuses: expand, then set the PVC's capacity.
func (m *Manager) expandLegacy(ctx context.Context, pod *v1.Pod, spec volumeSpec, paths volumePaths, pvc *v1.PersistentVolumeClaim, plan resizePlan) (bool, error) {
	if err := m.nodeExpand(ctx, spec, paths, plan.newSize); err != nil {
		var ee *expandError
		if errors.As(err, &ee) && ee.unsupported {
			return true, nil
		}
		if errors.As(err, &ee) && ee.inUse {
			m.noOnlineExpansion(ctx, spec, err)
			return true, nil
		}
		return false, err
	}
	m.resized(pod, pvc, spec)
	if statusCap := pvc.Status.Capacity[v1.ResourceStorage]; statusCap.Cmp(plan.newSize) >= 0 {
		return true, nil
	}
	if _, err := m.patchClaimStatus(ctx, pvc, resizeFinished(pvc, plan.newSize), true); err != nil {
		return false, fmt.Errorf("mountVolume.NodeExpandVolume update PVC status failed : %w", err)
	}
	return true, nil
}

// expandRecovery is kubelet's flow with RecoverVolumeExpansionFailure:
// NodeResizeInProgress, expand, then the new capacity with the status and
// the resize conditions cleared; a failure is recorded on the PVC
// (NodeResizeError, or NodeResizeInfeasible).
func (m *Manager) expandRecovery(ctx context.Context, pod *v1.Pod, spec volumeSpec, paths volumePaths, pvc *v1.PersistentVolumeClaim, plan resizePlan) (bool, error) {
	var err error
	if !plan.alreadyUpdated {
		if pvc, err = m.patchClaimStatus(ctx, pvc, withStorageStatus(pvc, v1.PersistentVolumeClaimNodeResizeInProgress), true); err != nil {
			return false, fmt.Errorf("MountVolume.NodeExpandVolume failed to mark node expansion in progress: %w", err)
		}
	}
	if err := m.nodeExpand(ctx, spec, paths, plan.newSize); err != nil {
		var ee *expandError
		isExpand := errors.As(err, &ee)
		m.mu.Lock()
		m.resize[spec.Unique()].failedFinal = true
		m.mu.Unlock()
		infeasible := plan.markInfeasible || (isExpand && ee.infeasible)
		if _, perr := m.patchClaimStatus(ctx, pvc, resizeFailed(pvc, err, infeasible, metav1.Now()), false); perr != nil {
			klog.FromContext(ctx).Error(perr, "MountVolume.NodeExpandVolume failed to mark node expansion as failed", "pvc", klog.KObj(pvc))
		}
		if isExpand && ee.inUse {
			m.noOnlineExpansion(ctx, spec, err)
			return false, nil
		}
		return false, err
	}
	m.resized(pod, pvc, spec)
	if plan.alreadyUpdated {
		return true, nil
	}
	if _, err := m.patchClaimStatus(ctx, pvc, resizeFinished(pvc, plan.newSize), true); err != nil {
		return false, fmt.Errorf("mountVolume.NodeExpandVolume update pvc status failed: %w", err)
	}
	return true, nil
}

// noOnlineExpansion records that the driver cannot expand the volume
// while it is published (FailedPrecondition): not asked again until the
// volume is mounted anew.
func (m *Manager) noOnlineExpansion(ctx context.Context, spec volumeSpec, err error) {
	klog.FromContext(ctx).Error(err, "MountVolume.NodeExapndVolume failed", "volume", spec.Unique())
	m.mu.Lock()
	m.resize[spec.Unique()].noOnlineExpand = true
	m.mu.Unlock()
}

// resized records kubelet's FileSystemResizeSuccessful on the pod and the
// PVC.
func (m *Manager) resized(pod *v1.Pod, pvc *v1.PersistentVolumeClaim, spec volumeSpec) {
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", spec.PVName, pod.Spec.NodeName)
	m.event(pod, v1.EventTypeNormal, EventFileSystemResizeSuccessful, msg)
	m.event(pvc, v1.EventTypeNormal, EventFileSystemResizeSuccessful, msg)
}

// event records an event on obj (a pod or a PVC) when events are wired.
func (m *Manager) event(obj runtime.Object, eventType, reason, msg string) {
	if m.cfg.Event != nil {
		m.cfg.Event(obj, eventType, reason, msg)
	}
}

// nodeExpand calls NodeExpandVolume for the volume at paths (a block
// volume's: its publish path) with the PV's nodeExpandSecretRef.
func (m *Manager) nodeExpand(ctx context.Context, spec volumeSpec, paths volumePaths, newSize resource.Quantity) error {
	return m.withDriver(ctx, spec.Driver, func(ctx context.Context, c *csi.Client) error {
		caps, err := c.NodeGetCapabilities(ctx)
		if err != nil {
			return fmt.Errorf("Expander.NodeExpand failed to check if node supports expansion : %w", err)
		}
		if !caps.Expand {
			return &expandError{unsupported: true,
				err: fmt.Errorf("Expander.NodeExpand found CSI plugin kubernetes.io/csi/%s to not support node expansion", spec.Driver)}
		}
		secrets, err := m.secret(ctx, spec.ExpandSecretRef)
		if err != nil {
			ref := spec.ExpandSecretRef
			return fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		staging := ""
		if caps.StageUnstage {
			staging = paths.staging
		}
		_, err = c.Node().NodeExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{
			VolumeId: spec.Handle, VolumePath: paths.target, StagingTargetPath: staging,
			CapacityRange:    &csipb.CapacityRange{RequiredBytes: newSize.Value()},
			VolumeCapability: capability(spec, spec.MountOptions, ""), Secrets: secrets,
		})
		if err != nil {
			return classifyExpandError(err)
		}
		klog.FromContext(ctx).Info("Volume expanded on the node", "volume", spec.Unique(), "size", newSize.String())
		return nil
	})
}

// patchClaimStatus patches the PVC's status from old to updated (a
// strategic merge patch, with old's resourceVersion as a precondition
// when checked) and returns the PVC the API server answers.
func (m *Manager) patchClaimStatus(ctx context.Context, old, updated *v1.PersistentVolumeClaim, checked bool) (*v1.PersistentVolumeClaim, error) {
	patch, err := claimStatusPatch(old, updated, checked)
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %w", old.Name, err)
	}
	out, err := m.cfg.Client.PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %w", old.Name, err)
	}
	return out, nil
}

// claimStatusPatch is the strategic merge patch from old to updated,
// carrying old's resourceVersion when checked.
func claimStatusPatch(old, updated *v1.PersistentVolumeClaim, checked bool) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(updated)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.PersistentVolumeClaim{})
	if err != nil {
		return nil, err
	}
	if !checked {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = old.ResourceVersion
	return json.Marshal(m)
}
