package devicemanager

import (
	"context"
	"fmt"

	"github.com/kernelet/kernelet/agent/podworkers"
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
		if err := m.Admit(ctx, a.Pod); err != nil {
			return podworkers.AdmitResult{Reason: podworkers.ReasonUnexpectedAdmit, Message: AdmitMessage(err)}
		}
		return podworkers.AdmitResult{Admit: true}
	})
}
