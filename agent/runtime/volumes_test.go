package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// fakeVolumes sets up volumes from a table; setUpErr fails SetUp.
type fakeVolumes struct {
	paths    map[string]string
	setUpErr error
	torn     []types.UID
}

func (f *fakeVolumes) SetUp(context.Context, *v1.Pod) (map[string]string, error) {
	return f.paths, f.setUpErr
}
func (f *fakeVolumes) TearDown(_ context.Context, uid types.UID) error {
	f.torn = append(f.torn, uid)
	return nil
}
func (f *fakeVolumes) SubPath(_ context.Context, _ *v1.Pod, req podconfig.SubPathRequest) (string, error) {
	return req.VolumeHostPath + "/" + req.SubPath, nil
}

type ownReasonError struct{}

func (ownReasonError) Error() string       { return "limit" }
func (ownReasonError) EventReason() string { return "VolumeAttachmentLimitExceeded" }

func TestSyncPodVolumes(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	vols := &fakeVolumes{setUpErr: errors.Join(errors.New(`MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`))}
	m.vols = vols
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg", SubPath: "x"}}
	f.images["img:1"] = true

	st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	r := m.SyncPod(ctx, pod, st, SyncOptions{})
	if r.Err() == nil || r.SandboxID != "" {
		t.Fatalf("sync with a failing volume: err %v, sandbox %q; want an error and no sandbox", r.Err(), r.SandboxID)
	}
	if len(r.Events) != 1 || r.Events[0].Reason != EventFailedMount || r.Events[0].Type != v1.EventTypeWarning ||
		r.Events[0].Message != `MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found` {
		t.Errorf("events = %+v, want one FailedMount", r.Events)
	}

	// An error with its own event reason (the volume manager's
	// VolumeAttachmentLimitExceeded rejection) is warned with it.
	vols.setUpErr = ownReasonError{}
	r = m.SyncPod(ctx, pod, st, SyncOptions{})
	if len(r.Events) != 1 || r.Events[0].Reason != "VolumeAttachmentLimitExceeded" || r.Events[0].Message != "limit" {
		t.Errorf("events = %+v, want the error's own reason", r.Events)
	}

	vols.setUpErr, vols.paths = nil, map[string]string{"cfg": "/pods/u/volumes/cfg"}
	r = m.SyncPod(ctx, pod, st, SyncOptions{})
	if err := r.Err(); err != nil || r.Started["app"] == "" {
		t.Fatalf("sync once the volume is ready: %v, started %v", err, r.Started)
	}
	f.mu.Lock()
	mounts := f.ctrs[r.Started["app"]].GetMounts()
	f.mu.Unlock()
	if len(mounts) == 0 || mounts[0].HostPath != "/pods/u/volumes/cfg/x" || mounts[0].ContainerPath != "/cfg" {
		t.Errorf("mounts = %v, want the subPath of the volume at /cfg", mounts)
	}
	hosts := false
	for _, mt := range mounts {
		hosts = hosts || mt.ContainerPath == podconfig.EtcHostsPath
	}
	if !hosts {
		t.Errorf("mounts = %v, want the managed /etc/hosts", mounts)
	}
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err := m.KillPod(ctx, pod, st, nil).Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vols.torn) != fmt.Sprint([]types.UID{pod.UID}) {
		t.Errorf("torn down = %v", vols.torn)
	}
}
