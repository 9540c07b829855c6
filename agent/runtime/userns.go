package runtime

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// UserNamespaces hands out pods' user namespaces (agent/userns.Manager).
type UserNamespaces interface {
	// Mapping is pod's CRI user namespace; supported is asked, only for
	// a pod with hostUsers: false, whether handler supports them.
	Mapping(pod *v1.Pod, handler string, supported func() (bool, error)) (*runtimeapi.UserNamespace, error)
}

// podHandler is the runtime handler of pod's sandbox: its RuntimeClass's,
// or the Manager's default.
func (m *Manager) podHandler(pod *v1.Pod) (string, error) {
	h, err := podconfig.RuntimeHandler(pod, m.rcs)
	if err != nil {
		return "", err
	}
	if h == "" {
		h = m.handler
	}
	return h, nil
}

// podUserNamespace is pod's user namespace, as kubelet passes it in the
// sandbox's and containers' namespace options: NODE mode, or for
// hostUsers: false the pod's range when the runtime handler reports user
// namespace support (CRI Status runtime_handlers), else kubelet's error.
func (m *Manager) podUserNamespace(ctx context.Context, pod *v1.Pod, handler string) (*runtimeapi.UserNamespace, error) {
	if m.userns == nil {
		if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
			return nil, errors.New("can't set `spec.hostUsers: false`, user namespaces are not configured on this node")
		}
		return nil, nil
	}
	return m.userns.Mapping(pod, handler, func() (bool, error) { return m.handlerSupportsUserns(ctx, handler) })
}

// handlerSupportsUserns asks the runtime whether handler supports user
// namespaces, as kubelet decides it: a runtime that reports no handlers
// (containerd 1.6) does not; an unknown handler is an error.
func (m *Manager) handlerSupportsUserns(ctx context.Context, handler string) (bool, error) {
	st, err := m.rs.Status(ctx, false)
	if err != nil {
		return false, fmt.Errorf("runtime status: %w", err)
	}
	hs := st.GetRuntimeHandlers()
	if len(hs) == 0 {
		return false, nil
	}
	for _, h := range hs {
		if h.GetName() == handler {
			return h.GetFeatures().GetUserNamespaces(), nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", handler)
}
