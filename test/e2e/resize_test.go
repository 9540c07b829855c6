package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// TestClusterResize: in-place pod resize through the API server's resize
// subresource (kube-apiserver v1.37.2), on real containerd. Each step reads
// the cgroup files back:
//   - a running pod reports containerStatuses[].resources and
//     allocatedResources, so the API server takes resizes for it;
//   - cpu up and memory up, then cpu down: the same container (no restart)
//     gets the new CFS quota and memory limit, the pod cgroup follows,
//     PodResizeInProgress comes and goes, ResizeStarted/ResizeCompleted;
//   - a memory limit below what the container uses: PodResizeInProgress
//     with reason Error and kubelet's message, nothing changes, no OOM kill;
//     taken back, the condition clears;
//   - resizePolicy RestartContainer for memory restarts only that
//     container; the other one is updated in place;
//   - more cpu than is left: PodResizePending Deferred with kubelet's
//     message, allocated once the pod taking the room is deleted;
//   - more cpu than the node's allocatable: refused by the API server;
//   - a resize sent while the agent is down completes after it restarts,
//     from the allocation checkpoint;
//   - a running regular init container is resized in place
//     (resizeInitContainer).
//
// Pod-level resources are resized in TestClusterResizePodLevel.
func TestClusterResize(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	q := resource.MustParse
	pod := apiTestPod("resize", 1, "alloc", "-mib", "48", "-hold")
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("32Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("96Mi")},
	}
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side", Image: pod.Spec.Containers[0].Image,
		ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("20m"), v1.ResourceMemory: q("16Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("32Mi")},
		},
		ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}},
	})
	c.createPod(t, pod)
	running := c.waitPhase(t, "resize", v1.PodRunning, 60*time.Second)
	app, side := containerStatusOf(t, running, "app"), containerStatusOf(t, running, "side")
	if app.Resources == nil || app.Resources.Limits.Memory().Value() != 96<<20 || app.AllocatedResources.Cpu().MilliValue() != 50 {
		t.Fatalf("app status resources %+v allocated %v: want the spec's", app.Resources, app.AllocatedResources)
	}
	podCg := c.cgroupRoot + "/kubepods/burstable/pod" + string(running.UID)
	appCg := podCg + "/" + ctrID(app)
	expectCgroup(t, appCg, 20000, 96<<20)
	expectCgroup(t, podCg+"/"+ctrID(side), 10000, 32<<20)
	expectCgroup(t, podCg, 30000, 128<<20)

	// cpu and memory up, in place.
	resized := c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("100m")
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: q("300m"), v1.ResourceMemory: q("128Mi")}
	})
	done := c.waitResized(t, resized)
	if a := containerStatusOf(t, done, "app"); ctrID(a) != ctrID(app) || a.RestartCount != 0 {
		t.Errorf("app was restarted by an in-place resize: %s restarts %d", ctrID(a), a.RestartCount)
	}
	expectCgroup(t, appCg, 30000, 128<<20)
	expectCgroup(t, podCg, 40000, 160<<20)
	c.waitEvents(t, done, "ResizeStarted", "ResizeCompleted")
	// The burstable QoS cgroup's share follows its pods' requests:
	// (100m + 20m)·1024/1000.
	burstable := c.cgroupRoot + "/kubepods/burstable"
	waitFor(t, 10*time.Second, "burstable cpu shares 122", func() (bool, error) {
		got := readCPUShares(t, burstable)
		return got == 122, fmt.Errorf("cpu shares %d", got)
	})

	// cpu down.
	resized = c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = q("150m")
	})
	c.waitResized(t, resized)
	expectCgroup(t, appCg, 15000, 128<<20)
	expectCgroup(t, podCg, 25000, 160<<20)

	// memory below what the container holds (48 MiB): refused, no OOM kill.
	c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = q("40Mi")
	})
	below := regexp.MustCompile(`memory limit \(\d+\) below current usage`)
	failed := c.waitResizeError(t, "resize", below)
	t.Logf("memory below usage: %s", podCondition(failed, v1.PodResizeInProgress).Message)
	if a := containerStatusOf(t, failed, "app"); ctrID(a) != ctrID(app) || a.RestartCount != 0 || a.State.Running == nil {
		t.Errorf("app after a refused memory decrease: %+v", a)
	}
	expectCgroup(t, appCg, 15000, 128<<20)
	resized = c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = q("128Mi")
	})
	c.waitResized(t, resized)

	// RestartContainer for memory restarts side only; app's cpu changes in place.
	resized = c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = q("200m")
		p.Spec.Containers[1].Resources.Limits[v1.ResourceMemory] = q("48Mi")
	})
	done = c.waitResized(t, resized)
	a, s := containerStatusOf(t, done, "app"), containerStatusOf(t, done, "side")
	if ctrID(a) != ctrID(app) || a.RestartCount != 0 {
		t.Errorf("app restarted (%d) by a resize of side", a.RestartCount)
	}
	if s.RestartCount != 1 || ctrID(s) == ctrID(side) {
		t.Errorf("side: restart count %d, id %s (was %s): want restarted once for its RestartContainer policy", s.RestartCount, ctrID(s), ctrID(side))
	}
	expectCgroup(t, podCg+"/"+ctrID(s), 10000, 48<<20)
	expectCgroup(t, appCg, 20000, 128<<20)

	// More cpu than is left: Deferred until the pod taking it goes.
	node, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := node.Status.Allocatable.Cpu().MilliValue()
	c.startHog(t, alloc/2)
	want := alloc/2 + 100
	resized = c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(want, resource.DecimalSI)
		p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = *resource.NewMilliQuantity(want, resource.DecimalSI)
	})
	c.waitDeferred(t, "resize", want+20)
	c.deletePod(t, "hog", nil)
	c.waitResized(t, resized)
	expectCgroup(t, appCg, want*100, 128<<20)
	// The deferred resize is accepted on a retry: the hog's removal, or the
	// pod's own resync once the hog no longer counts (terminating).
	metrics := c.metrics(t)
	for _, re := range []string{`kubelet_pod_deferred_accepted_resizes_total\{retry_trigger="(pods_removed|pod_terminated|pod_resized)"\} 1\n`,
		`kubelet_pod_resize_duration_milliseconds_count\{success="false"\} [1-9]`, `kubelet_pod_in_progress_resizes 0\n`} {
		if !regexp.MustCompile(re).MatchString(metrics) {
			t.Errorf("/metrics lacks %s", re)
		}
	}

	// More than the node has: the API server refuses.
	_, err = c.tryResize(t, "resize", func(p *v1.Pod) {
		over := *resource.NewMilliQuantity(alloc*2, resource.DecimalSI)
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = over
		p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = over
	})
	if err == nil || !strings.Contains(err.Error(), "node didn't have enough allocatable resources") {
		t.Errorf("resize beyond allocatable: %v; want the API server's refusal", err)
	}

	// A resize sent while the agent is down completes after its restart.
	c.stop(t, syscall.SIGTERM)
	resized = c.resize(t, "resize", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("100m")
		p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = q("250m")
	})
	c.start(t)
	done = c.waitResized(t, resized)
	if a := containerStatusOf(t, done, "app"); ctrID(a) != ctrID(app) {
		t.Errorf("app replaced across the agent restart")
	}
	expectCgroup(t, appCg, 25000, 128<<20)

	resizeInitContainer(t, c)
}

// resizeInitContainer: a running regular (non-sidecar) init container is
// resized in place, up then back down (InPlacePodVerticalScalingInitContainers,
// upstream's "should support resizing a non-sidecar init container"): the
// node declares the feature, so the API server takes the resize; the same
// container gets the new CFS quota and memory limit, the Guaranteed pod's
// cgroup follows (its init container is the largest), and
// initContainerStatuses[].resources/allocatedResources report them.
func resizeInitContainer(t *testing.T, c *clusterNode) {
	start := time.Now()
	defer func() { t.Logf("init container step: %v", time.Since(start).Round(time.Millisecond)) }()
	node, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(node.Status.DeclaredFeatures, "InPlacePodVerticalScalingInitContainers") {
		t.Errorf("declaredFeatures %v lacks InPlacePodVerticalScalingInitContainers", node.Status.DeclaredFeatures)
	}
	q := resource.MustParse
	res := func(cpu, mem string) v1.ResourceRequirements {
		l := v1.ResourceList{v1.ResourceCPU: q(cpu), v1.ResourceMemory: q(mem)}
		return v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	pod := apiTestPod("initresize", 1, "sleep")
	pod.Spec.Containers[0].Resources = res("100m", "32Mi")
	init := pod.Spec.Containers[0]
	init.Name = "init"
	pod.Spec.InitContainers = []v1.Container{init}
	c.createPod(t, pod)
	running := c.waitStatus(t, "initresize", "init container running", 60*time.Second, func(p *v1.Pod) bool {
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil
	})
	id := ctrID(running.Status.InitContainerStatuses[0])
	podCg := c.cgroupRoot + "/kubepods/pod" + string(running.UID)
	for _, step := range []struct {
		r          v1.ResourceRequirements
		quota, mem int64
	}{{res("200m", "64Mi"), 20000, 64 << 20}, {res("100m", "32Mi"), 10000, 32 << 20}} {
		resized := c.resize(t, "initresize", func(p *v1.Pod) { p.Spec.InitContainers[0].Resources = step.r })
		done := c.waitStatus(t, "initresize", "init container resized", 60*time.Second, func(p *v1.Pod) bool {
			if podCondition(p, v1.PodResizePending) != nil || podCondition(p, v1.PodResizeInProgress) != nil ||
				p.Status.ObservedGeneration < resized.Generation || len(p.Status.InitContainerStatuses) != 1 {
				return false
			}
			cs := p.Status.InitContainerStatuses[0]
			return cs.Resources != nil && quantitiesEqual(cs.Resources.Limits, step.r.Limits) &&
				quantitiesEqual(cs.Resources.Requests, step.r.Requests) && quantitiesEqual(cs.AllocatedResources, step.r.Requests)
		})
		if cs := done.Status.InitContainerStatuses[0]; ctrID(cs) != id || cs.RestartCount != 0 || cs.State.Running == nil {
			t.Errorf("init container after an in-place resize: id %s (was %s), restarts %d, %+v", ctrID(cs), id, cs.RestartCount, cs.State)
		}
		expectCgroup(t, podCg+"/"+id, step.quota, step.mem)
		expectCgroup(t, podCg, step.quota, step.mem)
		c.waitEvents(t, done, "ResizeStarted", "ResizeCompleted")
	}
}

// waitResizeError waits for the named pod's PodResizeInProgress with
// reason Error and a message matching msg.
func (c *clusterNode) waitResizeError(t *testing.T, name string, msg *regexp.Regexp) *v1.Pod {
	t.Helper()
	return c.waitStatus(t, name, "PodResizeInProgress Error", 30*time.Second, func(p *v1.Pod) bool {
		cond := podCondition(p, v1.PodResizeInProgress)
		return cond != nil && cond.Reason == v1.PodReasonError && msg.MatchString(cond.Message)
	})
}

// startHog runs pod "hog" requesting milliCPU, to leave too little cpu
// for a resize.
func (c *clusterNode) startHog(t *testing.T, milliCPU int64) {
	t.Helper()
	hog := apiTestPod("hog", 1, "sleep")
	hog.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)}
	c.createPod(t, hog)
	c.waitPhase(t, "hog", v1.PodRunning, 60*time.Second)
}

// waitDeferred waits for the named pod's PodResizePending Deferred with
// kubelet's message for a pod requesting requested milliCPU, and its
// ResizeDeferred event.
func (c *clusterNode) waitDeferred(t *testing.T, name string, requested int64) {
	t.Helper()
	deferred := c.waitStatus(t, name, "PodResizePending Deferred", 30*time.Second, func(p *v1.Pod) bool {
		cond := podCondition(p, v1.PodResizePending)
		return cond != nil && cond.Reason == v1.PodReasonDeferred
	})
	msg := podCondition(deferred, v1.PodResizePending).Message
	if !strings.HasPrefix(msg, fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: ", requested)) {
		t.Errorf("Deferred message %q", msg)
	}
	c.waitEvents(t, deferred, "ResizeDeferred")
}

// resize sends a resize of the named pod (change edits a copy) and returns
// the pod the API server stored.
func (c *clusterNode) resize(t *testing.T, name string, change func(*v1.Pod)) *v1.Pod {
	t.Helper()
	p, err := c.tryResize(t, name, change)
	if err != nil {
		t.Fatalf("resize of %s: %v", name, err)
	}
	return p
}

func (c *clusterNode) tryResize(t *testing.T, name string, change func(*v1.Pod)) (*v1.Pod, error) {
	t.Helper()
	cur, err := c.getPod(t, name)
	if err != nil {
		return nil, err
	}
	next := cur.DeepCopy()
	change(next)
	return c.admin.CoreV1().Pods(c.ns).UpdateResize(t.Context(), name, next, metav1.UpdateOptions{})
}

// waitResized waits until the pod reports the resized spec's resources
// for its running containers, with no resize condition left.
func (c *clusterNode) waitResized(t *testing.T, want *v1.Pod) *v1.Pod {
	t.Helper()
	return c.waitStatus(t, want.Name, fmt.Sprintf("resize to generation %d actuated", want.Generation), 60*time.Second, func(p *v1.Pod) bool {
		if podCondition(p, v1.PodResizePending) != nil || podCondition(p, v1.PodResizeInProgress) != nil ||
			p.Status.ObservedGeneration < want.Generation {
			return false
		}
		for _, spec := range want.Spec.Containers {
			cs := containerStatusOf(t, p, spec.Name)
			if cs.State.Running == nil || cs.Resources == nil ||
				!quantitiesEqual(cs.Resources.Limits, spec.Resources.Limits) || !quantitiesEqual(cs.Resources.Requests, spec.Resources.Requests) {
				return false
			}
		}
		return true
	})
}

func quantitiesEqual(a, b v1.ResourceList) bool {
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		x, y := a[name], b[name]
		if x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}

func podCondition(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func containerStatusOf(t *testing.T, pod *v1.Pod, name string) v1.ContainerStatus {
	t.Helper()
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	t.Fatalf("pod %s has no status for container %s", pod.Name, name)
	return v1.ContainerStatus{}
}

// ctrID is a container status's runtime ID.
func ctrID(cs v1.ContainerStatus) string {
	_, id, _ := strings.Cut(cs.ContainerID, "://")
	return id
}

// expectCgroup checks a cgroup's CFS quota (µs per 100 ms) and memory
// limit.
func expectCgroup(t *testing.T, path string, quota, mem int64) {
	t.Helper()
	if got := readCPUQuota(t, path); got != quota {
		t.Errorf("%s: cpu quota %d, want %d", path, got, quota)
	}
	if got := readMemLimit(t, path); got != mem {
		t.Errorf("%s: memory limit %d, want %d", path, got, mem)
	}
}

// readCPUQuota is the CFS quota of the cgroup at path (v1
// cpu.cfs_quota_us or the first field of v2 cpu.max; -1: none).
func readCPUQuota(t *testing.T, path string) int64 {
	t.Helper()
	for _, dir := range cgroupfs.PodDirs(path) {
		for _, f := range []string{"cpu.cfs_quota_us", "cpu.max"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			field := strings.Fields(string(b))[0]
			if field == "max" {
				return -1
			}
			var v int64
			if _, err := fmt.Sscan(field, &v); err == nil {
				return v
			}
		}
	}
	t.Fatalf("no cpu quota found for cgroup %s", path)
	return 0
}

// readMemLimit is the memory limit of the cgroup at path (relative to the
// hierarchies), from the v1 memory hierarchy or cgroup v2.
func readMemLimit(t *testing.T, path string) int64 {
	t.Helper()
	for _, dir := range cgroupfs.PodDirs(path) {
		for _, f := range []string{"memory.limit_in_bytes", "memory.max"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			var v int64
			if _, err := fmt.Sscan(string(b), &v); err == nil {
				return v
			}
		}
	}
	t.Fatalf("no memory limit found for cgroup %s", path)
	return 0
}

// readCPUShares is the cpu.shares of the cgroup at path (v1; on v2 the
// cpu.weight is converted back: kubelet's weight = 1 + (shares-2)·9999/262142).
func readCPUShares(t *testing.T, path string) int64 {
	t.Helper()
	for _, dir := range cgroupfs.PodDirs(path) {
		if b, err := os.ReadFile(filepath.Join(dir, "cpu.shares")); err == nil {
			var v int64
			if _, err := fmt.Sscan(string(b), &v); err == nil {
				return v
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cpu.weight")); err == nil {
			var w int64
			if _, err := fmt.Sscan(string(b), &w); err == nil {
				return 2 + (w-1)*262142/9999
			}
		}
	}
	t.Fatalf("no cpu shares found for cgroup %s", path)
	return 0
}
