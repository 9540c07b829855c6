package podconfig

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerDevices is what device plugins allocated to a container
// (agent/devicemanager merges their allocate responses), as plain values:
// the container gets the devices, the mounts before its volume mounts,
// the environment variables before its own (which win a duplicate name),
// the annotations under kernelet's own, and the CDI devices by name.
type ContainerDevices struct {
	Devices     []DeviceSpec
	Mounts      []DeviceMount
	Envs        []KeyValue
	Annotations []KeyValue
	// CDIDevices are fully qualified CDI device names (vendor.com/class=name).
	CDIDevices []string
}

// DeviceSpec is a host device node made available in the container.
type DeviceSpec struct {
	ContainerPath, HostPath string
	// Permissions are the cgroup permissions ("r", "w", "m" combined).
	Permissions string
}

// DeviceMount is a host path a device plugin mounts into the container.
type DeviceMount struct {
	ContainerPath, HostPath string
	ReadOnly                bool
}

// KeyValue is one environment variable or annotation.
type KeyValue struct{ Key, Value string }

// IsZero tells that no device plugin gave the container anything.
func (d ContainerDevices) IsZero() bool {
	return len(d.Devices) == 0 && len(d.Mounts) == 0 && len(d.Envs) == 0 && len(d.Annotations) == 0 && len(d.CDIDevices) == 0
}

// applyDevices adds d to cfg: device envs before the container's own, the
// mounts before the volume mounts, annotations under kernelet's.
func applyDevices(cfg *runtimeapi.ContainerConfig, d ContainerDevices) {
	if d.IsZero() {
		return
	}
	var envs []*runtimeapi.KeyValue
	for _, e := range d.Envs {
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Key, Value: []byte(e.Value)})
	}
	cfg.Envs = append(envs, cfg.Envs...)
	var mounts []*runtimeapi.Mount
	for _, m := range d.Mounts {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly})
	}
	cfg.Mounts = append(mounts, cfg.Mounts...)
	for _, dev := range d.Devices {
		cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: dev.ContainerPath, HostPath: dev.HostPath, Permissions: dev.Permissions})
	}
	for _, name := range d.CDIDevices {
		cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: name})
	}
	if len(d.Annotations) > 0 {
		merged := map[string]string{}
		for _, a := range d.Annotations {
			merged[a.Key] = a.Value
		}
		for k, v := range cfg.Annotations {
			merged[k] = v
		}
		cfg.Annotations = merged
	}
}

// blockDevices are container c's volumeDevices as CRI devices, as kubelet
// hands them: the host path is the pod's link to the block volume's device
// (in hostPaths by volume name), permissions "mrw", or "r" when the pod's
// claim is read-only.
func blockDevices(pod *v1.Pod, c *v1.Container, hostPaths map[string]string) ([]*runtimeapi.Device, error) {
	var out []*runtimeapi.Device
	var errs []error
	for _, d := range c.VolumeDevices {
		host := hostPaths[d.Name]
		if host == "" {
			errs = append(errs, fmt.Errorf("cannot find volume %q to pass into container %q", d.Name, c.Name))
			continue
		}
		perm := "mrw"
		if readOnlyClaim(pod, d.Name) {
			perm = "r"
		}
		out = append(out, &runtimeapi.Device{ContainerPath: d.DevicePath, HostPath: host, Permissions: perm})
	}
	return out, errors.Join(errs...)
}

// readOnlyClaim tells whether the pod mounts claim volume name read-only.
func readOnlyClaim(pod *v1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ReadOnly
		}
	}
	return false
}
