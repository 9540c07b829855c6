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
