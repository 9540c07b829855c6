package devicemanager

import (
	"fmt"
	"maps"
	"slices"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// ResourceState is what the node knows of one device plugin resource.
type ResourceState struct {
	// Healthy and Unhealthy count the devices the plugin last listed.
	Healthy, Unhealthy int
	// Connected tells that a plugin serves the resource; while none does,
	// every device counts as unhealthy.
	Connected bool
	// StoppedAt is when the last plugin went away (zero while connected).
	StoppedAt time.Time
}

// Capacities are the node's device plugin resources.
type Capacities struct {
	// Capacity counts every device (healthy or not); Allocatable the
	// healthy ones of connected plugins.
	Capacity, Allocatable map[string]int64
	// Expired are the resources whose plugin has been gone longer than
	// StopGracePeriod: reported at 0 and forgotten.
	Expired []string
}

// Capacity is kubelet's capacity math for the device plugin resources at
// now: capacity = healthy + unhealthy devices, allocatable = healthy ones;
// a resource without plugin keeps its capacity with 0 allocatable for
// StopGracePeriod after the plugin went away, then expires.
func Capacity(rs map[string]ResourceState, now time.Time) Capacities {
	out := Capacities{Capacity: map[string]int64{}, Allocatable: map[string]int64{}}
	for _, name := range slices.Sorted(maps.Keys(rs)) {
		r := rs[name]
		if !r.Connected && !r.StoppedAt.IsZero() && now.Sub(r.StoppedAt) > StopGracePeriod {
			out.Expired = append(out.Expired, name)
			continue
		}
		healthy := int64(r.Healthy)
		if !r.Connected {
			healthy = 0
		}
		out.Capacity[name] = int64(r.Healthy + r.Unhealthy)
		out.Allocatable[name] = healthy
	}
	return out
}

// HeldUsable decides whether a container that does not run may start
// again with the devices it held before an agent restart (kubelet's node
// reboot case): only for a known resource (registered, or read from the
// checkpoint) whose plugin lists healthy devices again, all of the held
// ones among them.
func HeldUsable(name string, registered bool, healthy, held []string) error {
	switch {
	case !registered:
		return fmt.Errorf(errUnregistered, name)
	case len(healthy) == 0:
		return fmt.Errorf(errNoHealthy, name)
	}
	for _, id := range held {
		if !slices.Contains(healthy, id) {
			return fmt.Errorf(errPrevUnhealthy, name)
		}
	}
	return nil
}

// Available are the healthy devices no container holds, sorted.
func Available(healthy []string, inUse map[string]bool) []string {
	var out []string
	for _, id := range healthy {
		if !inUse[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// FromReusable takes up to need devices from reusable (those the pod's
// finished init containers held), sorted.
func FromReusable(need int, reusable []string) []string {
	r := slices.Sorted(slices.Values(reusable))
	return r[:min(need, len(r))]
}

// MergeResponses merges the allocate responses of a container's resources
// (in order) into its run options: a container path, env or annotation
// already set keeps its first value, and each conflict is returned as a
// message to log; CDI device names appear once.
func MergeResponses(resps []*pluginapi.ContainerAllocateResponse) (podconfig.ContainerDevices, []string) {
	var out podconfig.ContainerDevices
	var conflicts []string
	envs, devs := firstWins{what: "environment variable", c: &conflicts}, firstWins{what: "device", c: &conflicts}
	mounts, annots := firstWins{what: "mount", c: &conflicts}, firstWins{what: "annotation", c: &conflicts}
	cdi := map[string]bool{}
	for _, r := range resps {
		if r == nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(r.Envs)) {
			if envs.add(k, r.Envs[k]) {
				out.Envs = append(out.Envs, podconfig.KeyValue{Key: k, Value: r.Envs[k]})
			}
		}
		for _, d := range r.Devices {
			if devs.add(d.ContainerPath, d.HostPath) {
				out.Devices = append(out.Devices, podconfig.DeviceSpec{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
			}
		}
		for _, m := range r.Mounts {
			if mounts.add(m.ContainerPath, m.HostPath) {
				out.Mounts = append(out.Mounts, podconfig.DeviceMount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, ReadOnly: m.ReadOnly})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
			if annots.add(k, r.Annotations[k]) {
				out.Annotations = append(out.Annotations, podconfig.KeyValue{Key: k, Value: r.Annotations[k]})
			}
		}
		for _, c := range r.CdiDevices {
			if c == nil || c.Name == "" || cdi[c.Name] {
				continue
			}
			cdi[c.Name] = true
			out.CDIDevices = append(out.CDIDevices, c.Name)
		}
	}
	return out, conflicts
}

// firstWins keeps the first value of each key; a later different value is
// a conflict message in *c.
type firstWins struct {
	what string
	seen map[string]string
	c    *[]string
}

// add records k=v and tells whether k is new.
func (f *firstWins) add(k, v string) bool {
	if old, ok := f.seen[k]; ok {
		if old != v {
			*f.c = append(*f.c, fmt.Sprintf("%s %s has conflicting values %q and %q", f.what, k, old, v))
		}
		return false
	}
	if f.seen == nil {
		f.seen = map[string]string{}
	}
	f.seen[k] = v
	return true
}
