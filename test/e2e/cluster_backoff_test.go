package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/images"
)

// TestClusterBackOffImageUpdate: a crash-looping API pod whose image is
// updated starts its CrashLoopBackOff over (kubelet keys the back-off by
// container name and image; upstream's "Pods should have their
// auto-restart back-off timer reset on image update" [Slow] spec). The
// container exits 1 after a second: after its third restart the next one
// is held 40 s; with the new image it restarts within seconds.
func TestClusterBackOffImageUpdate(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	pod := apiTestPod("backoff-image", 1)
	pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "sleep 1; exit 1"}
	c.createPod(t, pod)

	status := func() (v1.ContainerStatus, error) {
		p, err := c.getPod(t, pod.Name)
		if err != nil {
			return v1.ContainerStatus{}, err
		}
		if len(p.Status.ContainerStatuses) != 1 {
			return v1.ContainerStatus{}, fmt.Errorf("%d container statuses", len(p.Status.ContainerStatuses))
		}
		return p.Status.ContainerStatuses[0], nil
	}
	// Third restart done and exited again: the next restart waits 40 s.
	waitFor(t, 90*time.Second, "three restarts and the back-off of the fourth", func() (bool, error) {
		cs, err := status()
		if err != nil {
			return false, err
		}
		w := cs.State.Waiting
		return cs.RestartCount == 3 && w != nil && w.Reason == "CrashLoopBackOff",
			fmt.Errorf("restarts %d state %+v", cs.RestartCount, cs.State)
	})
	cs, _ := status()
	t.Logf("held: %s", cs.State.Waiting.Message)

	p, err := c.getPod(t, pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Containers[0].Image = images.MirrorOnlyImage
	if _, err := c.admin.CoreV1().Pods(c.ns).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, 30*time.Second, "a restart with the new image", func() (bool, error) {
		cs, err := status()
		if err != nil {
			return false, err
		}
		return cs.RestartCount >= 4 && cs.Image == images.MirrorOnlyImage, fmt.Errorf("restarts %d image %s state %+v", cs.RestartCount, cs.Image, cs.State)
	})
	t.Logf("restarted with the new image %v after the update", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("the restart with the new image took %v: it waited the old back-off (40 s), want it to start over", took)
	}
}
