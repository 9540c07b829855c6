package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterResizePodLevel: in-place resize of pod-level resources
// (spec.resources, InPlacePodLevelResourcesVerticalScaling) through the
// API server's resize subresource (kube-apiserver v1.37.2), on real
// containerd, reading the cgroup files back. The pod has a container
// without limits of its own (it runs with the pod-level limits), one with
// its own, and one without whose cpu resizePolicy is RestartContainer:
//   - the node declares InPlacePodLevelResourcesVerticalScaling (else the
//     API server refuses such resizes); the running pod reports
//     status.allocatedResources and status.resources;
//   - pod-level cpu and memory up: the pod cgroup gets the new quota,
//     memory limit and shares; the container without limits follows in
//     place, the one with its own limits keeps them, the one with
//     RestartContainer for cpu restarts; ResizeStarted/ResizeCompleted;
//   - the pod-level memory limit below what the pod uses: PodResizeInProgress
//     Error with kubelet's message, nothing changes, no OOM kill; taken
//     back, the condition clears;
//   - a pod-level cpu request beyond what is left: PodResizePending
//     Deferred with kubelet's message, allocated once the pod taking the
//     room is deleted;
//   - a pod-level resize sent while the agent is down completes after its
//     restart (allocated and actuated checkpoints).
func TestClusterResizePodLevel(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	q := resource.MustParse
	var node *v1.Node
	waitFor(t, 20*time.Second, "Node registered", func() (bool, error) {
		var err error
		node, err = c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
		return err == nil && node.Status.Allocatable.Cpu().MilliValue() > 0, err
	})
	if !slices.Contains(node.Status.DeclaredFeatures, "InPlacePodLevelResourcesVerticalScaling") {
		t.Fatalf("declaredFeatures %q lack InPlacePodLevelResourcesVerticalScaling", node.Status.DeclaredFeatures)
	}

	pod := apiTestPod("plr", 1, "alloc", "-mib", "48", "-hold")
	pod.Spec.Resources = &v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("128Mi")},
	}
	image := pod.Spec.Containers[0].Image
	pod.Spec.Containers = append(pod.Spec.Containers,
		v1.Container{Name: "own", Image: image, ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("20m"), v1.ResourceMemory: q("16Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("32Mi")},
			}},
		v1.Container{Name: "rs", Image: image, ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
			ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}})
	c.createPod(t, pod)
	running := c.waitPhase(t, "plr", v1.PodRunning, 60*time.Second)
	if got := running.Status.AllocatedResources; got.Cpu().MilliValue() != 100 || got.Memory().Value() != 64<<20 {
		t.Errorf("status.allocatedResources %v: want the pod-level requests", got)
	}
	app, own, rs := containerStatusOf(t, running, "app"), containerStatusOf(t, running, "own"), containerStatusOf(t, running, "rs")
	podCg := c.cgroupRoot + "/kubepods/burstable/pod" + string(running.UID)
	appCg, ownCg := podCg+"/"+ctrID(app), podCg+"/"+ctrID(own)
	expectCgroup(t, podCg, 20000, 128<<20)
	expectCgroup(t, appCg, 20000, 128<<20) // the pod-level limits
	expectCgroup(t, ownCg, 5000, 32<<20)
	expectCgroup(t, podCg+"/"+ctrID(rs), 20000, 128<<20)
	if got := readCPUShares(t, podCg); got != 102 {
		t.Errorf("pod cpu shares %d, want 102 (100m)", got)
	}

	// Pod-level cpu and memory up, in place but for rs.
	resized := c.resize(t, "plr", func(p *v1.Pod) {
		p.Spec.Resources.Requests[v1.ResourceCPU] = q("150m")
		p.Spec.Resources.Limits = v1.ResourceList{v1.ResourceCPU: q("300m"), v1.ResourceMemory: q("160Mi")}
	})
	done := c.waitPodLevelResized(t, resized)
	if a := containerStatusOf(t, done, "app"); ctrID(a) != ctrID(app) || a.RestartCount != 0 {
		t.Errorf("app was restarted by an in-place pod-level resize: %s restarts %d", ctrID(a), a.RestartCount)
	}
	if o := containerStatusOf(t, done, "own"); ctrID(o) != ctrID(own) || o.RestartCount != 0 {
		t.Errorf("own was restarted by a pod-level resize: restarts %d", o.RestartCount)
	}
	r := containerStatusOf(t, done, "rs")
	if r.RestartCount != 1 || ctrID(r) == ctrID(rs) {
		t.Errorf("rs: restart count %d, id %s (was %s): want restarted once for its cpu RestartContainer policy", r.RestartCount, ctrID(r), ctrID(rs))
	}
	expectCgroup(t, podCg, 30000, 160<<20)
	expectCgroup(t, appCg, 30000, 160<<20)
	expectCgroup(t, ownCg, 5000, 32<<20)
	expectCgroup(t, podCg+"/"+ctrID(r), 30000, 160<<20)
	if got := readCPUShares(t, podCg); got != 153 {
		t.Errorf("pod cpu shares %d, want 153 (150m)", got)
	}
	if got := done.Status.AllocatedResources.Cpu().MilliValue(); got != 150 {
		t.Errorf("status.allocatedResources cpu %dm, want 150m", got)
	}
	c.waitEvents(t, done, "ResizeStarted", "ResizeCompleted")

	// The pod-level memory limit below what app holds (48 MiB): refused,
	// no OOM kill.
	c.resize(t, "plr", func(p *v1.Pod) {
		p.Spec.Resources.Requests[v1.ResourceMemory] = q("40Mi")
		p.Spec.Resources.Limits[v1.ResourceMemory] = q("40Mi")
	})
	below := regexp.MustCompile(`attempting to set pod memory limit \(\d+\) below current usage`)
	failed := c.waitResizeError(t, "plr", below)
	t.Logf("pod memory below usage: %s", podCondition(failed, v1.PodResizeInProgress).Message)
	if a := containerStatusOf(t, failed, "app"); ctrID(a) != ctrID(app) || a.RestartCount != 0 || a.State.Running == nil {
		t.Errorf("app after a refused pod memory decrease: %+v", a)
	}
	if got := failed.Status.Resources.Limits.Memory().Value(); got != 160<<20 {
		t.Errorf("status.resources memory limit %d after a refused decrease, want 160Mi", got)
	}
	expectCgroup(t, podCg, 30000, 160<<20)
	expectCgroup(t, appCg, 30000, 160<<20)
	resized = c.resize(t, "plr", func(p *v1.Pod) {
		p.Spec.Resources.Requests[v1.ResourceMemory] = q("64Mi")
		p.Spec.Resources.Limits[v1.ResourceMemory] = q("160Mi")
	})
	c.waitPodLevelResized(t, resized)

	// Pod-level memory down (above usage) and cpu down, in place.
	resized = c.resize(t, "plr", func(p *v1.Pod) {
		p.Spec.Resources.Limits[v1.ResourceMemory] = q("96Mi")
		p.Spec.Resources.Limits[v1.ResourceCPU] = q("300m") // rs keeps running
		p.Spec.Resources.Requests[v1.ResourceCPU] = q("120m")
	})
	c.waitPodLevelResized(t, resized)
	expectCgroup(t, podCg, 30000, 96<<20)
	expectCgroup(t, appCg, 30000, 96<<20)
	if got := readCPUShares(t, podCg); got != 122 {
		t.Errorf("pod cpu shares %d, want 122 (120m)", got)
	}

	// A pod-level cpu request beyond what is left: Deferred until the pod
	// taking the room goes.
	alloc := node.Status.Allocatable.Cpu().MilliValue()
	c.startHog(t, alloc/2)
	want := alloc/2 + 100
	resized = c.resize(t, "plr", func(p *v1.Pod) {
		p.Spec.Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(want, resource.DecimalSI)
		p.Spec.Resources.Limits[v1.ResourceCPU] = *resource.NewMilliQuantity(want, resource.DecimalSI)
	})
	c.waitDeferred(t, "plr", want) // the pod-level request, not the containers' sum
	c.deletePod(t, "hog", nil)
	done = c.waitPodLevelResized(t, resized)
	expectCgroup(t, podCg, want*100, 96<<20)
	expectCgroup(t, appCg, want*100, 96<<20)
	rsID := ctrID(containerStatusOf(t, done, "rs")) // restarted again for its cpu

	// A pod-level resize sent while the agent is down completes after its
	// restart.
	c.stop(t, syscall.SIGTERM)
	resized = c.resize(t, "plr", func(p *v1.Pod) {
		p.Spec.Resources.Requests[v1.ResourceCPU] = q("100m")
		p.Spec.Resources.Limits[v1.ResourceCPU] = q("250m")
		p.Spec.Resources.Limits[v1.ResourceMemory] = q("112Mi")
	})
	c.start(t)
	done = c.waitPodLevelResized(t, resized)
	if a := containerStatusOf(t, done, "app"); ctrID(a) != ctrID(app) {
		t.Errorf("app replaced across the agent restart")
	}
	if r := containerStatusOf(t, done, "rs"); ctrID(r) == rsID {
		t.Errorf("rs not restarted for its cpu RestartContainer policy across the agent restart")
	}
	expectCgroup(t, podCg, 25000, 112<<20)
	expectCgroup(t, appCg, 25000, 112<<20)
	expectCgroup(t, ownCg, 5000, 32<<20)
}

// waitPodLevelResized waits until the pod's resize to want is actuated
// (waitResized) and its status.resources report want's pod-level limits
// and status.allocatedResources its pod-level requests.
func (c *clusterNode) waitPodLevelResized(t *testing.T, want *v1.Pod) *v1.Pod {
	t.Helper()
	c.waitResized(t, want)
	return c.waitStatus(t, want.Name, fmt.Sprintf("pod-level status of generation %d", want.Generation), 30*time.Second, func(p *v1.Pod) bool {
		return p.Status.Resources != nil && quantitiesEqual(p.Status.Resources.Limits, want.Spec.Resources.Limits) &&
			quantitiesEqual(p.Status.AllocatedResources, want.Spec.Resources.Requests)
	})
}
