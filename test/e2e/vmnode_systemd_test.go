package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kernelet/kernelet/test/env/images"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

// testV2NodeSystemd switches the booted v2 node to the systemd cgroup
// driver, as an administrator would (no second boot: CI time): containerd
// gets SystemdCgroup = true and is restarted. kernelet, whose
// configuration still says cgroupDriver: cgroupfs, refuses to start,
// naming both drivers (the runtime's, over CRI RuntimeConfig, wins as in
// kubelet, but a contradicting configured driver is an error); with
// cgroupDriver: systemd it starts and the node is Ready. An API pod then
// runs in kubepods-burstable-pod<uid>.slice, made over D-Bus with
// MemoryMax = the pod's limit (systemctl show, systemctl status, and
// memory.max of the slice and of the container's cri-containerd-<id>.scope);
// deleting the pod stops and removes the slice; an API pod with an init
// container, a sidecar and probes runs, its log is read and a command
// exec'd over the kubelet API, and its deletion leaves nothing in the
// guest (testV2NodePodLifecycle); an OOM kill in a
// container is attributed to its pod and container (OOMKilling event) on
// this layout. At the end the node goes back to cgroupfs.
func testV2NodeSystemd(t *testing.T, n *v2Node) {
	containerd, err := vmnode.ContainerdConfig("systemd")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n.guest(t, writeGuestFile(vmnode.ContainerdConfigPath, containerd)+"\nsystemctl restart containerd")
	t.Logf("containerd restarted with SystemdCgroup = true in %v", time.Since(start).Round(time.Millisecond))

	// kernelet (restarted with containerd: Requires=) still says cgroupfs.
	mismatch := `the configuration says \"cgroupfs\" but the container runtime reports \"systemd\"`
	waitFor(t, 90*time.Second, "kernelet refusing the mismatched driver", func() (bool, error) {
		out, err := n.Run(t.Context(), "journalctl --no-pager -u kernelet --since '-2min' | grep -c 'but the container runtime reports' || true")
		return err == nil && strings.TrimSpace(out) != "0", fmt.Errorf("%q %v", out, err)
	})
	line := n.guest(t, "journalctl --no-pager -u kernelet --since '-2min' | grep 'but the container runtime reports' | tail -1")
	if !strings.Contains(line, mismatch) && !strings.Contains(line, strings.ReplaceAll(mismatch, `\"`, `"`)) {
		t.Fatalf("kernelet's error does not name both drivers: %s", line)
	}
	t.Logf("mismatch refused: %s", line)

	// Whatever happens here, the node goes back to cgroupfs for the
	// subtests after this one.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		if err := n.setDriver(ctx, "cgroupfs", true); err != nil {
			t.Errorf("the node back to cgroupfs: %v", err)
			return
		}
		t.Logf("the node back to cgroupfs: kernelet running pods %v after containerd's restart", time.Since(start).Round(time.Millisecond))
	})
	start = time.Now()
	if err := n.setDriver(t.Context(), "systemd", false); err != nil {
		t.Fatal(err)
	}
	t.Logf("kernelet with cgroupDriver: systemd running pods %v after its restart", time.Since(start).Round(time.Millisecond))
	n.waitReady(t, 2*time.Minute)
	if got := n.guest(t, "systemctl show -p ActiveState,LoadState --value kubepods.slice kubepods-burstable.slice kubepods-besteffort.slice | grep -v '^$' | sort | uniq -c | sed 's/^ *//'"); got != "3 active\n3 loaded" {
		t.Fatalf("the QoS slices: %q, want 3 loaded and active", got)
	}

	t.Run("PodSlice", func(t *testing.T) { testV2NodePodSlice(t, n) })
	t.Run("PodLifecycle", func(t *testing.T) { testV2NodePodLifecycle(t, n) })
	t.Run("OOMKill", func(t *testing.T) { testV2NodeSystemdOOM(t, n) })
	t.Run("OOMGroup", func(t *testing.T) { testV2NodeOOMGroup(t, n) })
	// Last on this layout: it restarts kernelet with the eviction
	// scenario's configuration (the cleanup above restores cgroupfs's).
	t.Run("Eviction", func(t *testing.T) { testV2NodeEviction(t, n) })
	// No cgroup write failed on the way (the QoS slices' updates are logged
	// as errors, not returned).
	if out := n.guest(t, `journalctl --no-pager -o cat -u kernelet _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value kernelet) | grep -E '^E[0-9]{4}.*(cgroup|systemd unit)' || true`); out != "" {
		t.Fatalf("kernelet logged cgroup errors with the systemd driver:\n%s", out)
	}
}

// writeGuestFile is a shell command that writes data to path in the guest.
func writeGuestFile(path string, data []byte) string {
	return "cat > " + path + " <<'KERNELET_EOF'\n" + strings.TrimRight(string(data), "\n") + "\nKERNELET_EOF"
}

func testV2NodePodSlice(t *testing.T, n *v2Node) {
	ctx := t.Context()
	pod := n.limitedPod("sliced")
	start := time.Now()
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := n.waitRunning(t, pod.Name, 1)
	t.Logf("API pod created → Running: %v", time.Since(start).Round(time.Millisecond))
	cid := strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	slice := "kubepods-burstable-pod" + strings.ReplaceAll(string(created.UID), "-", "_") + ".slice"
	podDir := "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/" + slice
	ctrDir := n.guest(t, "find /sys/fs/cgroup -type d -name '*"+cid+"*'")
	if want := podDir + "/cri-containerd-" + cid + ".scope"; ctrDir != want {
		t.Fatalf("container %s cgroup: %q, want %s", cid, ctrDir, want)
	}
	want := fmt.Sprint(96 << 20)
	if got := n.guest(t, "cat "+ctrDir+"/memory.max "+podDir+"/memory.max"); got != want+"\n"+want {
		t.Fatalf("memory.max of the container scope and the pod slice: %q, want %s twice", got, want)
	}
	// The slice as systemd has it: made over D-Bus with kubelet's values
	// (cpu.weight of 50m: 1 + (51 − 2)·9999/262142 = 2; no cpu limit).
	show := n.guest(t, "systemctl show -p ActiveState,MemoryMax,CPUWeight,CPUQuotaPerSecUSec,TasksMax,Description "+slice)
	for _, w := range []string{"ActiveState=active", "MemoryMax=" + want, "CPUWeight=2", "CPUQuotaPerSecUSec=infinity", "TasksMax=infinity",
		"Description=kernelet: pod cgroup " + slice} {
		if !strings.Contains(show, w+"\n") && !strings.HasSuffix(show, w) {
			t.Fatalf("systemctl show %s lacks %s:\n%s", slice, w, show)
		}
	}
	t.Logf("systemctl show %s:\n%s", slice, show)
	// The stats sweep reads the pod slice (the pod's PSI gauges on the
	// agent's /metrics, local socket).
	series := `kernelet_pod_pressure_avg10_ratio{kind="some",namespace="` + n.ns + `",pod="sliced",resource="memory"}`
	waitFor(t, 30*time.Second, "the pod's PSI gauge", func() (bool, error) {
		m, err := n.localMetrics(t)
		return strings.Contains(m, series+" "), fmt.Errorf("%v; no %s in:\n%s", err, series, grepLines(m, "kernelet_pod_pressure"))
	})
	// The QoS slices are updated over D-Bus as pods come and go:
	// kubepods-burstable.slice's cpu weight is its pods' cpu requests'
	// (50m: 2), 1 without any.
	burstableWeight := func(want string) {
		t.Helper()
		waitFor(t, 30*time.Second, "kubepods-burstable.slice CPUWeight="+want, func() (bool, error) {
			out, err := n.Run(ctx, "systemctl show -p CPUWeight --value kubepods-burstable.slice; cat /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.weight")
			return err == nil && strings.TrimSpace(out) == want+"\n"+want, fmt.Errorf("%q %v", out, err)
		})
	}
	burstableWeight("2")
	status := n.guest(t, "systemctl status --no-pager --full --lines=0 kubepods.slice")
	if !strings.Contains(status, slice) || !strings.Contains(status, "cri-containerd-"+cid+".scope") {
		t.Fatalf("systemctl status kubepods.slice lists neither the pod slice nor the container's scope:\n%s", status)
	}
	t.Logf("systemctl status kubepods.slice:\n%s", status)

	start = time.Now()
	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod gone from the API server", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	deleted := time.Since(start)
	waitFor(t, 30*time.Second, "pod slice stopped and its cgroup removed", func() (bool, error) {
		out, err := n.Run(ctx, "systemctl show -p ActiveState --value "+slice+"; test -e "+podDir+" && echo exists || echo gone")
		return err == nil && strings.TrimSpace(out) == "inactive\ngone", fmt.Errorf("%q %v", out, err)
	})
	t.Logf("pod deleted: gone from the API server in %v, its slice stopped and removed %v after the delete",
		deleted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	burstableWeight("1")
}

// testV2NodeSystemdOOM: a container allocating 64 MiB under a 32Mi limit
// (beside one without a limit, so that the pod slice is unlimited) is
// OOM-killed; kernelet attributes the kill to the pod and the container
// from the victim's cgroup, the container's cri-containerd-<id>.scope in
// the pod slice.
func testV2NodeSystemdOOM(t *testing.T, n *v2Node) {
	ctx := t.Context()
	hog := withMemory(apiTestPod("hog", 1, "alloc", "--mib", "64"), "", "32Mi")
	hog.Namespace, hog.Spec.NodeName, hog.Spec.RestartPolicy = n.ns, n.name, v1.RestartPolicyNever
	hog.Spec.Containers = append(hog.Spec.Containers, v1.Container{Name: "idle", Image: images.TestboxImage,
		ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"}})
	start := time.Now()
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, hog, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	list := func() error { // the OOMKilling events of container app into msgs
		evs, err := n.admin.CoreV1().Events(n.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.uid", string(created.UID)),
			fields.OneTermEqualSelector("reason", "OOMKilling")).String()})
		if err != nil {
			return err
		}
		msgs = msgs[:0]
		for _, e := range evs.Items {
			if e.InvolvedObject.FieldPath == "spec.containers{app}" {
				msgs = append(msgs, e.Message)
			}
		}
		return nil
	}
	waitFor(t, 2*time.Minute, "OOMKilling event of the hog pod", func() (bool, error) {
		if err := list(); err != nil {
			return false, err
		}
		return len(msgs) > 0, fmt.Errorf("%d OOMKilling events of container app", len(msgs))
	})
	esc := strings.ReplaceAll(string(created.UID), "-", "_")
	want := regexp.MustCompile(`^Memory limit of the container reached: killed process [0-9]+ \(testbox\) in memcg ` +
		`/kubepods\.slice/kubepods-burstable\.slice/kubepods-burstable-pod` + esc + `\.slice/cri-containerd-[0-9a-f]{64}\.scope$`)
	t.Logf("OOM kill attributed %v after the pod was created", time.Since(start).Round(time.Millisecond))
	// The counter counts the same kills (the events of a second task may
	// still be on their way: read both again until they agree).
	waitFor(t, 20*time.Second, "kernelet_oom_kills_total = the OOMKilling events", func() (bool, error) {
		m, err := n.localMetrics(t)
		if err != nil {
			return false, err
		}
		if err := list(); err != nil {
			return false, err
		}
		counter := `kernelet_oom_kills_total{container="app",namespace="` + n.ns + `",pod="hog",scope="container"} ` + strconv.Itoa(len(msgs))
		return strings.Contains(m, counter+"\n"), fmt.Errorf("no %s in:\n%s", counter, grepLines(m, "kernelet_oom_kills_total"))
	})
	// One kill, or more: with memory.oom.group=1 the kernel kills the
	// group's tasks again after the victim and may mark another thread of
	// the dying process (seen: a second pid 20–30 ms after the first, in
	// 2 of 6 runs); kernelet counts each (oom.Kill.Pid is the thread id).
	for _, m := range msgs {
		if !want.MatchString(m) {
			t.Fatalf("OOMKilling events %q, want each matching %s", msgs, want)
		}
	}
	t.Logf("%d OOMKilling event(s): %q", len(msgs), msgs)
	// Where the kill came from and how long kernelet took (its log).
	t.Logf("kernelet's OOM log:\n%s", n.guest(t, "journalctl --no-pager -o cat -u kernelet _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value kernelet) | grep -E '\"OOM kill|OOM kills: ' || true"))
	p, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, hog.Name, metav1.GetOptions{})
	if err == nil {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "app" && cs.State.Terminated != nil {
				t.Logf("container app: %s (exit %d), started %v after the pod was created, finished %v after",
					cs.State.Terminated.Reason, cs.State.Terminated.ExitCode,
					cs.State.Terminated.StartedAt.Sub(created.CreationTimestamp.Time), cs.State.Terminated.FinishedAt.Sub(created.CreationTimestamp.Time))
			}
		}
	}
	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, hog.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "hog pod gone", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, hog.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if out := n.guest(t, "find /sys/fs/cgroup/kubepods.slice -name '*pod"+esc+"*'"); out != "" {
		t.Fatalf("the hog pod's cgroups are left: %s", out)
	}
}

// waitRunning waits for the pod's containers (want of them) to run.
func (n *v2Node) waitRunning(t *testing.T, name string, want int) *v1.Pod {
	t.Helper()
	var running *v1.Pod
	waitFor(t, 2*time.Minute, "pod "+name+" running", func() (bool, error) {
		p, err := n.admin.CoreV1().Pods(n.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running = p
		ok := p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == want
		for _, cs := range p.Status.ContainerStatuses {
			ok = ok && cs.State.Running != nil
		}
		return ok, fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return running
}

// localMetrics reads the agent's /metrics through its local socket in
// the guest (<root dir>/kernelet.sock), forwarded to the host over ssh.
func (n *v2Node) localMetrics(t *testing.T) (string, error) {
	t.Helper()
	sock, stop, err := n.ForwardUnix(t.Context(), "/var/lib/kernelet/kernelet.sock")
	if err != nil {
		return "", err
	}
	defer stop()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	resp, err := client.Get("http://kernelet/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET /metrics: %s %v", resp.Status, err)
	}
	return string(b), nil
}

// setDriver writes kernelet's configuration (v2NodeConfig) with the cgroup
// driver and, with containerd, containerd's, restarts them (kernelet
// restarts with containerd: Requires=) and waits until kernelet runs pods
// with that driver.
func (n *v2Node) setDriver(ctx context.Context, driver string, containerd bool) error {
	cfg := strings.Replace(v2NodeConfig, "cgroupDriver: cgroupfs", "cgroupDriver: "+driver, 1)
	script := writeGuestFile(vmnode.KerneletConfig, []byte(cfg)) + "\nsystemctl restart kernelet"
	if containerd {
		c, err := vmnode.ContainerdConfig(driver)
		if err != nil {
			return err
		}
		script = writeGuestFile(vmnode.KerneletConfig, []byte(cfg)) + "\n" + writeGuestFile(vmnode.ContainerdConfigPath, c) +
			"\nsystemctl restart containerd"
	}
	if _, err := n.Run(ctx, script); err != nil {
		return err
	}
	return n.waitDriver(ctx, driver)
}

// waitDriver waits until the running kernelet (its current invocation)
// runs pods with the cgroup driver.
func (n *v2Node) waitDriver(ctx context.Context, driver string) error {
	want := `cgroupDriver="` + driver + `"`
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := n.Run(ctx, `journalctl --no-pager -o cat -u kernelet _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value kernelet) | grep -E 'Using the cgroup driver|Running pods' || true`)
		if err == nil && strings.Count(out, "\n") == 2 && strings.Contains(out, want) && strings.Contains(out, "Running pods") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kernelet not running pods with %s after 2m: %q %v", want, out, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
