package devicemanager

import (
	"context"
	"fmt"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/internal/podutil"
)

// AdmitMessage is kubelet's admission message for an allocation that
// failed (reason UnexpectedAdmissionError).
func AdmitMessage(err error) string {
	return fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
}

// AdmitHandler allocates an admitted pod's devices (Admit); a failure
// rejects the pod with kubelet's UnexpectedAdmissionError and message.
func (m *Manager) AdmitHandler(ctx context.Context) podworkers.AdmitHandler {
	return podworkers.AdmitFunc(func(a podworkers.AdmitAttributes) podworkers.AdmitResult {
		if podutil.IsTerminal(a.Pod.Status.Phase) {
			// Finished before (an agent restart): it runs nothing more and
			// needs no device (kubelet does not admit it again).
			return podworkers.AdmitResult{Admit: true}
		}
		if err := m.Admit(ctx, a.Pod); err != nil {
			return podworkers.AdmitResult{Reason: podworkers.ReasonUnexpectedAdmit, Message: AdmitMessage(err)}
		}
		return podworkers.AdmitResult{Admit: true}
	})
}

// ReleaseOnReject runs handlers (one of them AdmitHandler) as one: when
// they reject a pod that held no device before, the devices allocated to
// it meanwhile are released (kubelet frees them at its next allocation, a
// rejected pod not being active). A pod admitted again (a resize) keeps
// what it holds.
func (m *Manager) ReleaseOnReject(handlers []podworkers.AdmitHandler) podworkers.AdmitHandler {
	return podworkers.AdmitFunc(func(a podworkers.AdmitAttributes) podworkers.AdmitResult {
		had := m.holds(a.Pod.UID)
		r := podworkers.Admit(handlers, a)
		if !r.Admit && !had {
			m.Release(a.Pod.UID)
		}
		return r
	})
}
