package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/userns"
)

func usernsManager(t *testing.T, f *fakeCRI, cg *fakeCgroups) (*Manager, *userns.Manager) {
	t.Helper()
	pods := t.TempDir()
	un, err := userns.New(userns.Config{PodsDir: pods, MaxPods: 110})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(ManagerConfig{Runtime: f, Images: f, Cgroups: cg, PodLogsDir: t.TempDir(), PodsDir: pods, UserNamespaces: un})
	if err != nil {
		t.Fatal(err)
	}
	return m, un
}

func hasEvent(r *SyncResult, reason, msg string) bool {
	for _, e := range r.Events {
		if e.Reason == reason && strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

// hostUsers: false on a runtime whose handler reports no user namespace
// support (containerd 1.6 reports no handlers) fails the sandbox with
// kubelet's event; with support, the sandbox and the containers get the
// pod's range, NODE mode for other pods.
func TestSyncPodUserNamespace(t *testing.T) {
	ctx := context.Background()
	f := newFakeCRI()
	f.images["img:1"] = true
	m, un := usernsManager(t, f, &fakeCgroups{pods: map[types.UID]bool{}})
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	pod.Spec.HostNetwork = false
	no := false
	pod.Spec.HostUsers = &no

	r := m.SyncPod(ctx, pod, nil, SyncOptions{})
	want := "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if !hasEvent(r, EventFailedCreateSandbox, want) || f.called("RunPodSandbox") != 0 || un.InUse() != 0 {
		t.Fatalf("old runtime: events %+v, RunPodSandbox %d, in use %d", r.Events, f.called("RunPodSandbox"), un.InUse())
	}

	f.handlers = []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}
	r = m.SyncPod(ctx, pod, nil, SyncOptions{})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := f.sandboxCfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	if got.GetMode() != runtimeapi.NamespaceMode_POD || got.GetUids()[0].GetHostId() != 65536 || got.GetGids()[0].GetLength() != 65536 {
		t.Fatalf("sandbox userns = %v", got)
	}
	if ns := f.ctrs[r.Started["app"]]; ns == nil {
		t.Fatal("app not created")
	}
	if first, ok := un.Allocated(pod.UID); !ok || first != 65536 {
		t.Errorf("allocated %d %v", first, ok)
	}

	// A pod with hostUsers unset: NODE mode, no range.
	other := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	other.UID, other.Name = "uid-2", "other"
	r = m.SyncPod(ctx, other, nil, SyncOptions{})
	if got := f.sandboxCfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); r.Err() != nil || got.GetMode() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("hostUsers pod: %v %v", got, r.Err())
	}
	if un.InUse() != 1 {
		t.Errorf("in use %d", un.InUse())
	}

	// A RuntimeClass handler the runtime does not know: kubelet's error.
	f.handlers = []*runtimeapi.RuntimeHandler{{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}
	third := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	third.UID, third.Spec.HostUsers, third.Spec.HostNetwork = "uid-3", &no, false
	r = m.SyncPod(ctx, third, nil, SyncOptions{})
	if !hasEvent(r, EventFailedCreateSandbox, `runtime does not support user namespaces: the handler "" is not known`) {
		t.Errorf("unknown handler: %+v", r.Events)
	}
}

// An image volume is pulled with its own pull policy before the
// containers start and mounted read-only with the pulled image; a failed
// pull holds back only the containers that mount it, with kubelet's
// reason and events.
func TestSyncPodImageVolumes(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	f.images["img:1"] = true
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app", "plain")
	pod.Spec.Volumes = []v1.Volume{{Name: "art", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "art:2", PullPolicy: v1.PullIfNotPresent}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "art", MountPath: "/art", SubPath: "bin"}}

	f.pullErr = errors.New("art:2 not found")
	r := m.SyncPod(ctx, pod, nil, SyncOptions{})
	if w := r.Waiting["app"]; w.Reason != ReasonErrImagePull || !strings.Contains(w.Message, "art:2 not found") {
		t.Errorf("app waiting %+v", w)
	}
	if r.Started["plain"] == "" || r.Started["app"] != "" {
		t.Errorf("started %v", r.Started)
	}
	if !hasEvent(r, EventFailed, `Failed to pull image "art:2"`) || !hasEvent(r, EventFailed, "Error: ErrImagePull") {
		t.Errorf("events %+v", r.Events)
	}
	for _, e := range r.Events {
		if e.Reason == EventPulling && e.Container != "" {
			t.Errorf("the image volume's pull event is on container %q, want the pod", e.Container)
		}
	}

	f.pullErr = nil
	m.backoff = NewBackoff(m.clock) // past the pull back-off
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	r = m.SyncPod(ctx, pod, st, SyncOptions{})
	if err := r.Err(); err != nil || r.Started["app"] == "" {
		t.Fatalf("second sync: %v %v", r.Started, err)
	}
	c := f.ctrs[r.Started["app"]]
	var mnt *runtimeapi.Mount
	for _, mm := range c.Mounts {
		if mm.ContainerPath == "/art" {
			mnt = mm
		}
	}
	if mnt == nil || !mnt.Readonly || mnt.HostPath != "" || mnt.ImageSubPath != "bin" ||
		mnt.GetImage().GetImage() != "sha256:art:2" || mnt.GetImage().GetUserSpecifiedImage() != "art:2" {
		t.Fatalf("image mount %v", mnt)
	}
	// The status reports the mounted image (ImageVolumeWithDigest).
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	out := ToAPIStatus(pod, st, m.clock.Now(), StatusInputs{})
	var vms []v1.VolumeMountStatus
	for _, cs := range out.ContainerStatuses {
		if cs.Name == "app" {
			vms = cs.VolumeMounts
		}
	}
	if len(vms) != 1 || vms[0].Name != "art" || vms[0].VolumeStatus == nil || vms[0].VolumeStatus.Image.ImageRef != "sha256:art:2" {
		t.Errorf("volume mount statuses %+v", vms)
	}
}
