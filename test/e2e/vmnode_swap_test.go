package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/images"
)

// swapOnScript turns swap on in the guest and restarts kernelet with
// failSwapOn false, LimitedSwap, memoryThrottlingFactor 0.9 and
// memoryReservationPolicy TieredReservation.
const swapOnScript = `set -e
fallocate -l 256M /swapfile && chmod 600 /swapfile && mkswap /swapfile >/dev/null && swapon /swapfile
printf 'failSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\nmemoryThrottlingFactor: 0.9\nmemoryReservationPolicy: TieredReservation\n' >> /etc/kernelet/config.yaml
systemctl restart kernelet`

// testV2NodeSwapResize: swap, Memory QoS and in-place resize on the
// cgroup v2 node with containerd 2. Swap is turned on in the guest and
// kernelet restarted with failSwapOn false, memorySwap.swapBehavior
// LimitedSwap and memoryThrottlingFactor 0.9; then for a Burstable API pod
// (memory request 64Mi, limit 128Mi) the container's cgroup reads back
// kubelet's values: memory.swap.max = request / MemTotal × SwapTotal
// (read back in whole pages),
// memory.high = request + 0.9 × (limit − request) rounded down to a page,
// the node reports its swap capacity; TieredReservation's memory.low and
// the QoS cgroups' reservations follow the pod's request; a resize of the cpu limit and the
// memory limit lands in cpu.max, memory.max and memory.high without a
// restart; a resize of the memory request is Infeasible (kubelet does not
// resize the swap of a swapping container).
func testV2NodeSwapResize(t *testing.T, n *v2Node) {
	ctx := t.Context()
	n.guest(t, swapOnScript)
	mem := strings.Fields(n.guest(t, "awk '/^MemTotal:|^SwapTotal:/ {print $2}' /proc/meminfo"))
	if len(mem) != 2 {
		t.Fatalf("meminfo: %q", mem)
	}
	memTotal, _ := strconv.ParseInt(mem[0], 10, 64)
	swapTotal, _ := strconv.ParseInt(mem[1], 10, 64)
	memTotal, swapTotal = memTotal<<10, swapTotal<<10
	waitFor(t, 2*time.Minute, "node Ready with its swap capacity", func() (bool, error) {
		node, err := n.admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sw := node.Status.NodeInfo.Swap
		ready := false
		for _, c := range node.Status.Conditions {
			ready = ready || c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
		}
		return ready && sw != nil && sw.Capacity != nil && *sw.Capacity == swapTotal, fmt.Errorf("ready %v swap %+v", ready, sw)
	})

	q := resource.MustParse
	grace, no := int64(1), false
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "swap", Namespace: n.ns},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no,
			Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"/bin/sleep", "3600"},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceMemory: q("64Mi"), v1.ResourceCPU: q("50m")},
					Limits:   v1.ResourceList{v1.ResourceMemory: q("128Mi"), v1.ResourceCPU: q("200m")},
				}}}},
	}
	if _, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := n.waitPod(t, "swap", "running", 2*time.Minute, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	cid := ctrID(running.Status.ContainerStatuses[0])
	dir := n.guest(t, "find /sys/fs/cgroup -type d -name '*"+cid+"*'")
	if dir == "" || strings.Contains(dir, "\n") {
		t.Fatalf("container %s cgroup: %q", cid, dir)
	}
	page := int64(4096)
	high := func(req, lim int64) string { return fmt.Sprint(int64(float64(req)+float64(lim-req)*0.9) / page * page) }
	// The kernel keeps memory.swap.max in pages: what kernelet writes
	// reads back rounded down to one.
	swap := fmt.Sprint(int64(float64(64<<20)/float64(memTotal)*float64(swapTotal)) / page * page)
	read := func() string {
		return n.guest(t, "cd "+dir+" && cat memory.swap.max memory.high memory.max cpu.max")
	}
	want := strings.Join([]string{swap, high(64<<20, 128<<20), fmt.Sprint(128 << 20), "20000 100000"}, "\n")
	if got := read(); got != want {
		t.Fatalf("memory.swap.max, memory.high, memory.max, cpu.max:\n%s\nwant\n%s", got, want)
	}
	t.Logf("LimitedSwap: memory.swap.max %s of swap %d (MemTotal %d); memory.high %s", swap, swapTotal, memTotal, high(64<<20, 128<<20))
	// TieredReservation: a Burstable container's request is its
	// memory.low, and the QoS cgroups carry the sums (burstable's
	// memory.low, kubepods' memory.min and memory.low), kept in step.
	res := fmt.Sprint(64 << 20)
	reserve := strings.Join([]string{res, res, res, res}, "\n")
	waitFor(t, 30*time.Second, "memory.low and the QoS cgroups' reservations", func() (bool, error) {
		got := n.guest(t, "cat "+dir+"/memory.low /sys/fs/cgroup/kubepods/burstable/memory.low /sys/fs/cgroup/kubepods/memory.min /sys/fs/cgroup/kubepods/memory.low")
		return got == reserve, fmt.Errorf("container memory.low, burstable memory.low, kubepods memory.min, memory.low: %q, want %q", got, reserve)
	})

	// Resize the cpu and memory limits in place.
	next := running.DeepCopy()
	next.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: q("160Mi"), v1.ResourceCPU: q("300m")}
	if _, err := n.admin.CoreV1().Pods(n.ns).UpdateResize(ctx, "swap", next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitPod(t, "swap", "resize actuated", time.Minute, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].Resources != nil && cs[0].Resources.Limits.Memory().Value() == 160<<20 &&
			cs[0].Resources.Limits.Cpu().MilliValue() == 300 && podCondition(p, v1.PodResizeInProgress) == nil
	})
	want = strings.Join([]string{swap, high(64<<20, 160<<20), fmt.Sprint(160 << 20), "30000 100000"}, "\n")
	if got := read(); got != want {
		t.Errorf("after the resize: memory.swap.max, memory.high, memory.max, cpu.max:\n%s\nwant\n%s", got, want)
	}
	// A memory request change of a swapping container: Infeasible.
	cur, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, "swap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ctrID(cur.Status.ContainerStatuses[0]) != cid || cur.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("container replaced by an in-place resize")
	}
	next = cur.DeepCopy()
	next.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = q("80Mi")
	if _, err := n.admin.CoreV1().Pods(n.ns).UpdateResize(ctx, "swap", next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	inf := n.waitPod(t, "swap", "PodResizePending Infeasible", time.Minute, func(p *v1.Pod) bool {
		c := podCondition(p, v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonInfeasible
	})
	if m := podCondition(inf, v1.PodResizePending).Message; m != "In-place resize of containers with swap is not supported." {
		t.Errorf("Infeasible message %q", m)
	}
}

// waitPod waits until cond holds for the named pod of the node's namespace.
func (n *v2Node) waitPod(t *testing.T, name, what string, timeout time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, timeout, name+": "+what, func() (bool, error) {
		p, err := n.admin.CoreV1().Pods(n.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return cond(p), fmt.Errorf("phase %s conditions %v statuses %v", p.Status.Phase, conditionSummary(p), statusSummary(p))
	})
	return pod
}
