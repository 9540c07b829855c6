package volumemanager

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReasonAttachLimitExceeded is kubelet's reason of a pod rejected because
// the node reached a driver's volume attachment limit.
const ReasonAttachLimitExceeded = "VolumeAttachmentLimitExceeded"

// AttachLimitError ends the wait of a pod whose volume's attachment failed
// with ResourceExhausted (kubelet's VolumeAttachLimitExceededError): the
// pod is rejected (Rejected).
type AttachLimitError struct {
	Unmounted, Unattached, Unprocessed []string
}

func (e *AttachLimitError) Error() string {
	return fmt.Sprintf("Node has reached its volume attachment limit, rejecting pod. unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %v",
		e.Unmounted, e.Unattached, e.Unprocessed, context.DeadlineExceeded)
}

// EventReason is the reason of the pod's warning event.
func (e *AttachLimitError) EventReason() string { return ReasonAttachLimitExceeded }

// resourceExhausted tells whether an attachment failed with the gRPC
// code ResourceExhausted (the node's volume limit reached).
func resourceExhausted(va *storagev1.VolumeAttachment) bool {
	e := va.Status.AttachError
	return e != nil && e.ErrorCode != nil && *e.ErrorCode == int32(codes.ResourceExhausted)
}

// reject records pod uid as rejected and returns why.
func (m *Manager) reject(uid types.UID, vols []v1.Volume, pending map[string]volumeError) error {
	e := &AttachLimitError{}
	for _, v := range vols {
		pe, ok := pending[v.Name]
		if !ok {
			continue
		}
		e.Unmounted = append(e.Unmounted, v.Name)
		if pe.unattached {
			e.Unattached = append(e.Unattached, v.Name)
		}
		if pe.unprocessed {
			e.Unprocessed = append(e.Unprocessed, v.Name)
		}
	}
	sort.Strings(e.Unmounted)
	sort.Strings(e.Unattached)
	sort.Strings(e.Unprocessed)
	m.mu.Lock()
	m.rejected[uid] = e.Error()
	m.mu.Unlock()
	return e
}

// Rejected tells whether pod uid was rejected (an AttachLimitError), with
// kubelet's reason and message, until its volumes are torn down.
func (m *Manager) Rejected(uid types.UID) (reason, message string, rejected bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msg, ok := m.rejected[uid]
	if !ok {
		return "", "", false
	}
	return ReasonAttachLimitExceeded, msg, true
}
