//go:build !linux

package cgroups

import (
	"context"
	"errors"
)

// errQoSUnsupported: the QoS hierarchy is written on Linux only.
var errQoSUnsupported = errors.New("qos manager: cgroups need Linux")

// Manager writes the QoS hierarchy; on this OS it cannot be built.
type Manager struct{}

// NewManager needs Linux.
func NewManager(h *Hierarchies, cfg ManagerConfig) (*Manager, error) { return nil, errQoSUnsupported }

// Root needs Linux.
func (m *Manager) Root() string { return "" }

// MemoryQoS needs Linux.
func (m *Manager) MemoryQoS() (bool, error) { return false, errQoSUnsupported }

// Owner needs Linux.
func (m *Manager) Owner(controller string) string { return "" }

// Hierarchies needs Linux.
func (m *Manager) Hierarchies() []string { return nil }

// Close needs Linux.
func (m *Manager) Close() error { return nil }

// Layout needs Linux.
func (m *Manager) Layout() Layout { return Layout{} }

// PodCgroup is the pod's cgroup under the Manager's root.
func (m *Manager) PodCgroup(class QOSClass, uid string) string { return "" }

// EnsureQoS needs Linux.
func (m *Manager) EnsureQoS(ctx context.Context, cfg QoSConfig, pods []PodResources) (QoSSettings, error) {
	return QoSSettings{}, errQoSUnsupported
}

// EnsurePod needs Linux.
func (m *Manager) EnsurePod(ctx context.Context, cfg QoSConfig, pod PodResources) (string, CgroupSettings, error) {
	return "", CgroupSettings{}, errQoSUnsupported
}

// Ensure needs Linux.
func (m *Manager) Ensure(ctx context.Context, cgroup string, s CgroupSettings) error {
	return errQoSUnsupported
}

// Remove needs Linux.
func (m *Manager) Remove(ctx context.Context, cgroup string) error { return errQoSUnsupported }

// Kill needs Linux.
func (m *Manager) Kill(ctx context.Context, cgroup string) (int, error) { return 0, errQoSUnsupported }

// Read needs Linux.
func (m *Manager) Read(ctx context.Context, cgroup string) (*CgroupState, error) {
	return nil, errQoSUnsupported
}

// Verify needs Linux.
func (m *Manager) Verify(ctx context.Context, cgroup string, s CgroupSettings) error {
	return errQoSUnsupported
}
