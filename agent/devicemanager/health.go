package devicemanager

import (
	"errors"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// healthUpdatesCap is how many updates wait for the agent (kubelet's
// channel size); beyond, an update is dropped with an error logged, as
// kubelet does.
const healthUpdatesCap = 100

// HealthStatus is kubelet's allocatedResourcesStatus of a container
// (ResourceHealthStatus): one entry per device plugin resource it holds,
// by name, with each device's health as the plugin last listed it —
// Healthy, else Unhealthy; a device its plugin has not listed (yet) counts
// as Healthy, as with kubelet. nil when it holds no device.
func (m *Manager) HealthStatus(uid types.UID, container string) []v1.ResourceStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.alloc[string(uid)][container]
	var out []v1.ResourceStatus
	for _, name := range slices.Sorted(maps.Keys(held)) {
		rs := v1.ResourceStatus{Name: v1.ResourceName(name), Resources: []v1.ResourceHealth{}}
		for _, id := range slices.Sorted(slices.Values(held[name].ids())) {
			health := v1.ResourceHealthStatusHealthy
			if r := m.resources[name]; r != nil && r.devices[id] != nil && r.devices[id].Health != pluginapi.Healthy {
				health = v1.ResourceHealthStatusUnhealthy
			}
			rs.Resources = append(rs.Resources, v1.ResourceHealth{ResourceID: v1.ResourceID(id), Health: health})
		}
		out = append(out, rs)
	}
	return out
}

// HealthUpdates delivers the pods whose devices changed health (or came
// back in their plugin's list): their status is to be refreshed.
func (m *Manager) HealthUpdates() <-chan []types.UID { return m.healthUpdates }

// changedHolders are the pods holding a device of resource name whose
// health differs between old and now, or that now lists anew.
func (m *Manager) changedHoldersLocked(name string, old, now map[string]*pluginapi.Device) []types.UID {
	changed := map[string]bool{}
	for id, d := range now {
		if o := old[id]; o == nil || o.Health != d.Health {
			changed[id] = true
		}
	}
	var out []types.UID
	for uid, cs := range m.alloc {
		for _, rs := range cs {
			if slices.ContainsFunc(rs[name].ids(), func(id string) bool { return changed[id] }) {
				out = append(out, types.UID(uid))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// sendHealthUpdate hands uids to HealthUpdates without blocking.
func (m *Manager) sendHealthUpdate(uids []types.UID) {
	if len(uids) == 0 {
		return
	}
	select {
	case m.healthUpdates <- uids:
	default:
		klog.FromContext(m.ctx).Error(errors.New("device update channel is full"), "Discarding the pods whose devices changed health", "podUIDs", uids)
	}
}
