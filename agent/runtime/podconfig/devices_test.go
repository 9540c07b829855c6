package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestContainerConfigDevices(t *testing.T) {
	pod := webPod()
	c := &pod.Spec.Containers[0]
	opts := containerOpts()
	opts.Devices = ContainerDevices{
		Devices:     []DeviceSpec{{ContainerPath: "/dev/gpu0", HostPath: "/dev/nvidia0", Permissions: "rw"}},
		Mounts:      []DeviceMount{{ContainerPath: "/usr/lib/gpu", HostPath: "/opt/gpu/lib", ReadOnly: true}},
		Envs:        []KeyValue{{Key: "PORT", Value: "from-plugin"}, {Key: "GPU", Value: "0"}},
		Annotations: []KeyValue{{Key: "vendor.example.com/gpu", Value: "0"}, {Key: AnnotationRestartCount, Value: "plugin"}},
		CDIDevices:  []string{"example.com/gpu=0"},
	}
	cfg, err := ContainerConfig(pod, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].ContainerPath != "/dev/gpu0" || cfg.Devices[0].HostPath != "/dev/nvidia0" || cfg.Devices[0].Permissions != "rw" {
		t.Errorf("devices = %v", cfg.Devices)
	}
	if len(cfg.CDIDevices) != 1 || cfg.CDIDevices[0].Name != "example.com/gpu=0" {
		t.Errorf("CDI devices = %v", cfg.CDIDevices)
	}
	if m := cfg.Mounts[0]; m.ContainerPath != "/usr/lib/gpu" || m.HostPath != "/opt/gpu/lib" || !m.Readonly {
		t.Errorf("first mount = %v, want the device plugin's", m)
	}
	// The plugin's envs come first: the container's PORT, later, wins in
	// the runtime.
	var keys []string
	for _, e := range cfg.Envs {
		keys = append(keys, e.Key+"="+string(e.Value))
	}
	if len(keys) < 3 || keys[0] != "PORT=from-plugin" || keys[1] != "GPU=0" || keys[len(keys)-2] != "PORT=8080" {
		t.Errorf("envs = %v", keys)
	}
	if cfg.Annotations["vendor.example.com/gpu"] != "0" {
		t.Errorf("the plugin's annotation is missing: %v", cfg.Annotations)
	}
	if cfg.Annotations[AnnotationRestartCount] != "1" {
		t.Errorf("kernelet's annotation %s = %q, want it over the plugin's", AnnotationRestartCount, cfg.Annotations[AnnotationRestartCount])
	}
}

func TestContainerConfigNoDevices(t *testing.T) {
	pod := webPod()
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], containerOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Devices) != 0 || len(cfg.CDIDevices) != 0 {
		t.Errorf("devices without a device plugin: %v %v", cfg.Devices, cfg.CDIDevices)
	}
}

func TestBlockDevices(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "rw", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "a"}}},
		{Name: "ro", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "b", ReadOnly: true}}},
	}}}
	c := &v1.Container{Name: "c", VolumeDevices: []v1.VolumeDevice{{Name: "rw", DevicePath: "/dev/xvda"}, {Name: "ro", DevicePath: "/dev/xvdb"}}}
	got, err := blockDevices(pod, c, map[string]string{"rw": "/pods/u/volumeDevices/kubernetes.io~csi/pv-a", "ro": "/pods/u/volumeDevices/kubernetes.io~csi/pv-b"})
	if err != nil || len(got) != 2 {
		t.Fatalf("blockDevices = %v, %v", got, err)
	}
	if d := got[0]; d.ContainerPath != "/dev/xvda" || d.HostPath != "/pods/u/volumeDevices/kubernetes.io~csi/pv-a" || d.Permissions != "mrw" {
		t.Errorf("rw device %v", d)
	}
	if d := got[1]; d.ContainerPath != "/dev/xvdb" || d.Permissions != "r" {
		t.Errorf("read-only device %v", d)
	}
	_, err = blockDevices(pod, c, map[string]string{"rw": "/x"})
	if err == nil || err.Error() != `cannot find volume "ro" to pass into container "c"` {
		t.Errorf("missing volume: %v", err)
	}
}
