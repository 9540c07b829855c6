package e2e

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/images"
)

// TestClusterRestartAllContainers: the Node declares the features of
// kubelet's registry kernelet has (status.declaredFeatures: RestartAll-
// ContainersOnContainerExits, ExtendWebSocketsToKubelet and the in-place
// resize ones of pod-level resources and init containers — the four
// kubelet v1.37.2 declares by default), so the real kube-scheduler v1.37 — whose
// NodeDeclaredFeatures filter places a pod with a RestartAllContainers
// rule only on a node declaring it — schedules such a pod onto it; there
// the rule's exit restarts both containers in place, as upstream's
// "should restart all containers on regular container exit" spec checks.
func TestClusterRestartAllContainers(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	var node *v1.Node
	waitFor(t, 20*time.Second, "Node Ready", func() (bool, error) {
		var err error
		if node, err = c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, cd := range node.Status.Conditions {
			if cd.Type == v1.NodeReady {
				return cd.Status == v1.ConditionTrue, fmt.Errorf("Ready=%s", cd.Status)
			}
		}
		return false, errors.New("no Ready condition")
	})
	if want := []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}; !slices.Equal(node.Status.DeclaredFeatures, want) {
		t.Errorf("declaredFeatures = %q, want %q", node.Status.DeclaredFeatures, want)
	}

	never := v1.ContainerRestartPolicyNever
	grace := int64(30)
	no := false
	mount := []v1.VolumeMount{{Name: "work", MountPath: "/mnt"}}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "restart-all", Namespace: c.ns},
		Spec: v1.PodSpec{
			// Through the scheduler: no nodeName, only this node fits.
			NodeSelector:                  map[string]string{v1.LabelHostname: c.node},
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Volumes:                       []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{
				{Name: "source", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
					Command:       []string{"/bin/sh", "-c", "if [ -f /mnt/done ]; then sleep 10000; else touch /mnt/done; sleep 1; exit 42; fi"},
					RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
						ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}},
				{Name: "regular", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
					Command: []string{"/bin/sh", "-c", "sleep 10000"}},
			},
		},
	}
	if _, err := c.admin.CoreV1().Pods(c.ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var got *v1.Pod
	took := waitFor(t, 60*time.Second, "both containers restarted once and running", func() (bool, error) {
		var err error
		if got, err = c.getPod(t, pod.Name); err != nil {
			return false, err
		}
		if got.Spec.NodeName != c.node {
			return false, fmt.Errorf("not scheduled onto %s: nodeName %q, conditions %+v", c.node, got.Spec.NodeName, got.Status.Conditions)
		}
		if got.Status.Phase == v1.PodFailed || got.Status.Phase == v1.PodSucceeded {
			return false, fmt.Errorf("phase %s", got.Status.Phase)
		}
		for _, cs := range got.Status.ContainerStatuses {
			if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.State.Running == nil {
				return false, fmt.Errorf("%s: restarts %d, last %+v, state %+v", cs.Name, cs.RestartCount, cs.LastTerminationState, cs.State)
			}
		}
		return len(got.Status.ContainerStatuses) == 2, fmt.Errorf("%d container statuses", len(got.Status.ContainerStatuses))
	})
	t.Logf("restarted in place %v after the pod was created", took.Round(time.Millisecond))
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("the reset took %v: the 30 s grace must not be waited for", d)
	}
	for _, cs := range got.Status.ContainerStatuses {
		if want := map[string]int32{"source": 42, "regular": 137}[cs.Name]; cs.LastTerminationState.Terminated.ExitCode != want {
			t.Errorf("%s: last exit %d, want %d", cs.Name, cs.LastTerminationState.Terminated.ExitCode, want)
		}
	}
	found := false
	for _, cd := range got.Status.Conditions {
		if cd.Type == v1.AllContainersRestarting {
			found = cd.Status == v1.ConditionFalse
		}
	}
	if !found {
		t.Errorf("no AllContainersRestarting=False condition in %+v", got.Status.Conditions)
	}
	if _, sbs := podObjects(t, c.rs, got.UID); len(sbs) != 1 {
		t.Errorf("%d sandboxes, want 1 (restarted in place)", len(sbs))
	}
}
