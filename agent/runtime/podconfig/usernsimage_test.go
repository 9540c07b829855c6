package podconfig

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A pod's user namespace goes into the sandbox's and every container's
// namespace options.
func TestUserNamespaceOptions(t *testing.T) {
	userns := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
		Uids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}},
		Gids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}}}
	pod := webPod()
	pod.Spec.HostUsers = ptr(false)
	sbOpts := sandboxOpts()
	sbOpts.UserNamespace = userns
	sb, err := SandboxConfig(pod, sbOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); !proto.Equal(got, userns) {
		t.Errorf("sandbox userns = %v, want %v", got, userns)
	}
	opts := containerOpts()
	opts.UserNamespace = userns
	c, err := ContainerConfig(pod, &pod.Spec.Containers[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); !proto.Equal(got, userns) {
		t.Errorf("container userns = %v, want %v", got, userns)
	}
	// Every mount is idmapped with the pod's mappings (kubelet's).
	if len(c.Mounts) == 0 {
		t.Fatal("no mounts")
	}
	for _, m := range c.Mounts {
		if len(m.UidMappings) != 1 || !proto.Equal(m.UidMappings[0], userns.Uids[0]) || len(m.GidMappings) != 1 || !proto.Equal(m.GidMappings[0], userns.Gids[0]) {
			t.Errorf("mount %s: uid mappings %v gid mappings %v", m.ContainerPath, m.UidMappings, m.GidMappings)
		}
	}
	// Without one, none is passed.
	sb, _ = SandboxConfig(webPod(), sandboxOpts())
	if got := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got != nil {
		t.Errorf("userns without option = %v", got)
	}
}

// procMount Unmasked passes empty masked and read-only lists (the runtime
// masks nothing); Default passes kubelet's lists and the node's
// thermal_throttle paths.
func TestProcMountPaths(t *testing.T) {
	pod := webPod()
	pod.Spec.HostUsers = ptr(false)
	c := &pod.Spec.Containers[0]
	opts := containerOpts()
	opts.ThermalThrottlePaths = []string{"/sys/devices/system/cpu/cpu0/thermal_throttle"}
	for name, tc := range map[string]struct {
		pm                 *v1.ProcMountType
		wantMasked, wantRO int
		wantThermal        bool
	}{
		"unset":    {nil, 13, 5, true},
		"Default":  {ptr(v1.DefaultProcMount), 13, 5, true},
		"Unmasked": {ptr(v1.UnmaskedProcMount), 0, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			c.SecurityContext.ProcMount = tc.pm
			cfg, err := ContainerConfig(pod, c, opts)
			if err != nil {
				t.Fatal(err)
			}
			sc := cfg.GetLinux().GetSecurityContext()
			if len(sc.MaskedPaths) != tc.wantMasked || len(sc.ReadonlyPaths) != tc.wantRO {
				t.Errorf("masked %q readonly %q", sc.MaskedPaths, sc.ReadonlyPaths)
			}
			if got := slices.Contains(sc.MaskedPaths, opts.ThermalThrottlePaths[0]); got != tc.wantThermal {
				t.Errorf("thermal_throttle masked = %v", got)
			}
		})
	}
}

func TestThermalThrottlePaths(t *testing.T) {
	exists := func(p string) bool { return !strings.Contains(p, "cpu2/") }
	got := ThermalThrottlePaths("0-2,5\n", exists)
	want := []string{"/sys/devices/system/cpu/cpu0/thermal_throttle", "/sys/devices/system/cpu/cpu1/thermal_throttle", "/sys/devices/system/cpu/cpu5/thermal_throttle"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := ThermalThrottlePaths("x,3-1", exists); len(got) != 0 {
		t.Errorf("malformed list gave %q", got)
	}
}

// procMount Unmasked is the API server's rule: only with hostUsers: false.
func TestValidateUnmaskedNeedsUserNamespace(t *testing.T) {
	pod := func(hostUsers *bool) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{HostUsers: hostUsers, Containers: []v1.Container{{Name: "app", Image: "i",
			SecurityContext: &v1.SecurityContext{ProcMount: ptr(v1.UnmaskedProcMount)}}}}}
	}
	for name, tc := range map[string]struct {
		hostUsers *bool
		want      string
	}{
		"hostUsers unset": {nil, "spec.containers[0].securityContext.procMount: `hostUsers` must be false to use `Unmasked`"},
		"hostUsers true":  {ptr(true), "`hostUsers` must be false to use `Unmasked`"},
		"hostUsers false": {ptr(false), ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidatePodForRuntime(pod(tc.hostUsers))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestValidateUserNamespaceWithHostNamespaces(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{HostUsers: ptr(false), HostNetwork: true, HostPID: true, HostIPC: true,
		Containers: []v1.Container{{Name: "app", Image: "i"}}}}
	err := ValidatePodForRuntime(pod)
	for _, f := range []string{"spec.hostNetwork", "spec.hostPID", "spec.hostIPC"} {
		if err == nil || !strings.Contains(err.Error(), f+": forbidden when `hostUsers` is false") {
			t.Errorf("err = %v, want %s refused", err, f)
		}
	}
	pod.Spec.HostUsers = nil
	if err := ValidatePodForRuntime(pod); err != nil {
		t.Errorf("host namespaces without hostUsers: false refused: %v", err)
	}
}

func imagePod(subPath string) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "art", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry.kernelet.test/testbox:v1", PullPolicy: v1.PullIfNotPresent}}}},
		Containers: []v1.Container{{Name: "app", Image: "i", Env: []v1.EnvVar{{Name: "DIR", Value: "bin"}},
			VolumeMounts: []v1.VolumeMount{{Name: "art", MountPath: "/art", SubPathExpr: subPath}}}}}}
}

func TestValidateRuntimeFeaturesImageVolumes(t *testing.T) {
	for name, tc := range map[string]struct {
		f       RuntimeFeatures
		subPath string
		want    string
	}{
		"containerd 1.6":              {RuntimeFeatures{"containerd", "1.6.20~ds1"}, "", `spec.volumes[0].image: volume "art": image volumes are not supported by the runtime (containerd 1.6.20~ds1; containerd mounts images from 2.1 on)`},
		"containerd 2.0":              {RuntimeFeatures{"containerd", "v2.0.5"}, "", "image volumes are not supported by the runtime"},
		"containerd 2.1":              {RuntimeFeatures{"containerd", "v2.1.0"}, "", ""},
		"containerd 2.1 with subPath": {RuntimeFeatures{"containerd", "v2.1.3"}, "$(DIR)", `spec.containers[0].volumeMounts[0]: volume mount "art": a subPath of an image volume is not supported by the runtime (containerd v2.1.3; containerd mounts image sub paths from 2.2 on)`},
		"containerd 2.4 with subPath": {RuntimeFeatures{"containerd", "v2.4.2"}, "$(DIR)", ""},
		"other runtime":               {RuntimeFeatures{"cri-o", "1.30.0"}, "x", ""},
		"unparsable version":          {RuntimeFeatures{"containerd", "dev"}, "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidateRuntimeFeatures(imagePod(tc.subPath), tc.f)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if HasImageVolumes(webPod()) || !HasImageVolumes(imagePod("")) {
		t.Error("HasImageVolumes")
	}
	if err := ValidatePodForRuntime(imagePod("")); err != nil {
		t.Errorf("an image volume is refused statically: %v", err)
	}
}

// An image volume is mounted by the runtime: read-only, the pulled image,
// the (expanded) subPath as the image sub path, no host path.
func TestImageVolumeMount(t *testing.T) {
	spec := &runtimeapi.ImageSpec{Image: "sha256:feed", UserSpecifiedImage: "registry.kernelet.test/testbox:v1"}
	pod := imagePod("$(DIR)")
	opts := ContainerOptions{ImageVolumes: map[string]*runtimeapi.ImageSpec{"art": spec}}
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.Mount{ContainerPath: "/art", Readonly: true, Image: spec, ImageSubPath: "bin",
		Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}
	if len(cfg.Mounts) != 1 || !proto.Equal(cfg.Mounts[0], want) {
		t.Errorf("mounts = %v, want %v", cfg.Mounts, want)
	}
	for sub, msg := range map[string]string{
		"/abs":   "error SubPath `/abs` must not be an absolute path",
		"a/../b": "unable to provision SubPath `a/../b`: must not contain '..'",
	} {
		p := imagePod(sub)
		if _, err := ContainerConfig(p, &p.Spec.Containers[0], opts); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("subPath %q: err = %v, want %q", sub, err, msg)
		}
	}
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerOptions{}); err == nil || !strings.Contains(err.Error(), `volume "art": image "registry.kernelet.test/testbox:v1" was not pulled`) {
		t.Errorf("without the pulled image: %v", err)
	}
}
