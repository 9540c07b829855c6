package runtime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// DynamicResources is what the pod side asks of dynamic resource
// allocation (agent/dra.Manager): a pod's ResourceClaims prepared by
// their DRA drivers before its sandbox is created, unprepared once its
// containers stopped, and the CDI devices of a container's claims.
type DynamicResources interface {
	PrepareResources(ctx context.Context, pod *v1.Pod) error
	UnprepareResources(ctx context.Context, pod *v1.Pod) error
	CDIDevices(pod *v1.Pod, c *v1.Container) ([]string, error)
}

// EventFailedPrepareDynamicResources is kubelet's event when a pod's
// claims could not be prepared (its sandbox is not created; retried).
const EventFailedPrepareDynamicResources = "FailedPrepareDynamicResources"

// prepareResources prepares pod's claims before its sandbox is created
// (kubelet's order; every pod, as kubelet, which counts each in its DRA
// metrics), recording kubelet's event when it fails; false then.
func (m *Manager) prepareResources(ctx context.Context, pod *v1.Pod, r *SyncResult) bool {
	if m.claims == nil {
		return true
	}
	err := m.claims.PrepareResources(ctx, pod)
	r.step(ActionPrepareResources, string(pod.UID), err, "")
	if err != nil {
		r.warn(EventFailedPrepareDynamicResources, fmt.Sprintf("Failed to prepare dynamic resources: %v", err))
		return false
	}
	return true
}

// unprepareResources unprepares pod's claims once its containers stopped
// (nothing when a stop failed: the kill is retried first); a failure is a
// step of r, so the termination is retried.
func (m *Manager) unprepareResources(ctx context.Context, pod *v1.Pod, r *SyncResult) {
	if m.claims == nil || pod == nil || r.Err() != nil {
		return
	}
	if err := m.claims.UnprepareResources(ctx, pod); err != nil {
		r.step(ActionUnprepare, string(pod.UID), err, "")
	}
}

// containerDevices are what the device plugins allocated to c and the CDI
// devices of its claims (its extended resource claim's too) after theirs
// (kubelet's order); an error holds c back (CreateContainerConfigError).
func (m *Manager) containerDevices(ctx context.Context, pod *v1.Pod, c *v1.Container) (podconfig.ContainerDevices, error) {
	var d podconfig.ContainerDevices
	var err error
	if m.devices != nil {
		if d, err = m.devices(ctx, pod, c); err != nil {
			return d, err
		}
	}
	if m.claims != nil && (len(c.Resources.Claims) > 0 || pod.Status.ExtendedResourceClaimStatus != nil) {
		cdi, err := m.claims.CDIDevices(pod, c)
		if err != nil {
			return d, err
		}
		d.CDIDevices = append(d.CDIDevices, cdi...)
	}
	return d, nil
}
