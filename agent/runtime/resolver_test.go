package runtime

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/oom"
)

func TestCgroupResolver(t *testing.T) {
	f := newFakeCRI()
	podLabels := map[string]string{podconfig.LabelPodName: "web", podconfig.LabelPodNamespace: "default", podconfig.LabelPodUID: "1234-5678"}
	f.sbs["sb1"] = &runtimeapi.PodSandboxStatus{Id: "sb1", Labels: podLabels}
	ctrLabels := map[string]string{podconfig.LabelPodName: "web", podconfig.LabelPodNamespace: "default", podconfig.LabelPodUID: "1234-5678", podconfig.LabelContainerName: "app"}
	f.ctrs["c0ffee"] = &runtimeapi.ContainerStatus{Id: "c0ffee", Labels: ctrLabels}
	f.ctrPod["c0ffee"] = "sb1"
	r := NewCgroupResolver(f)
	r.MinRefresh = 0
	pod := oom.PodRef{Namespace: "default", Name: "web", UID: "1234-5678"}
	app := pod
	app.Container = "app"
	tests := map[string]struct {
		cg   string
		want oom.PodRef
		ok   bool
	}{
		"container leaf":      {"/kubepods/burstable/pod1234-5678/c0ffee", app, true},
		"systemd scope":       {"/kubepods.slice/kubepods-pod1234_5678.slice/cri-containerd-c0ffee.scope", app, true},
		"sandbox leaf":        {"/kubepods/pod1234-5678/sb1", pod, true},
		"pod level":           {"/kubepods/besteffort/pod1234-5678", pod, true},
		"systemd pod slice":   {"/kubepods.slice/kubepods-pod1234_5678.slice", pod, true},
		"not a pod":           {"/system.slice/sshd.service", oom.PodRef{}, false},
		"unknown pod uid dir": {"/kubepods/podffff", oom.PodRef{}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := r.Resolve(t.Context(), tc.cg)
			if ok != tc.ok || got != tc.want {
				t.Errorf("Resolve(%q) = %+v, %v; want %+v, %v", tc.cg, got, ok, tc.want, tc.ok)
			}
		})
	}
	// A container re-created in a known pod is named after a refresh, not
	// answered with the pod alone from the cache.
	f.ctrs["beef"] = &runtimeapi.ContainerStatus{Id: "beef", Labels: ctrLabels}
	f.ctrPod["beef"] = "sb1"
	if got, ok := r.Resolve(t.Context(), "/kubepods/burstable/pod1234-5678/beef"); !ok || got != app {
		t.Errorf("re-created container: %+v, %v; want %+v", got, ok, app)
	}
}

func TestCgroupsPathOfInfo(t *testing.T) {
	for in, want := range map[string]string{
		`{"runtimeSpec":{"linux":{"cgroupsPath":"/kubepods/pod1/abc"}}}`:                "/kubepods/pod1/abc",
		`{"runtimeSpec":{"linux":{"cgroupsPath":"kubepods.slice:cri-containerd:abc"}}}`: "",
		`not json`: "",
	} {
		if got := cgroupsPathOfInfo(map[string]string{"info": in}); got != want {
			t.Errorf("cgroupsPathOfInfo(%s) = %q, want %q", in, got, want)
		}
	}
}
