package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	//lint:ignore SA1019 client-go's remotecommand takes this package's Upgrader, not k8s.io/streaming's
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kernelet/kernelet/test/env/images"
)

// testV2NodePodLifecycle runs, on the systemd driver, an API pod with a
// regular init container, a sidecar (restartPolicy Always) and an app
// serving HTTP with a readiness (HTTP) and a liveness (TCP) probe: it
// goes Ready; the app's log (the probe's requests in it) is read and a
// command exec'd in the app over the kubelet API in the guest; `systemctl
// status` shows the pod slice with the scopes of the sandbox, sidecar and
// app. Deleted with grace, every container ends on SIGTERM with exit code
// 0, and then no unit, cgroup, mount, shim, pod or log directory of the
// pod is left in the guest.
func testV2NodePodLifecycle(t *testing.T, n *v2Node) {
	ctx := t.Context()
	grace, no, always := int64(30), false, v1.ContainerRestartPolicyAlways
	box := func(name string, args ...string) v1.Container {
		return v1.Container{Name: name, Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent, Args: args}
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lifecycle", Namespace: n.ns}, Spec: v1.PodSpec{
		NodeName: n.name, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no,
		InitContainers: []v1.Container{box("init", "exit", "--code", "0"), box("sidecar", "sleep")},
		Containers:     []v1.Container{box("app", "serve", "--http", ":8080")}}}
	pod.Spec.InitContainers[1].RestartPolicy = &always
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1,
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}}}
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{PeriodSeconds: 2,
		ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
	start := time.Now()
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ready *v1.Pod
	waitFor(t, 2*time.Minute, "pod Ready", func() (bool, error) {
		p, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready = p
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s, conditions %+v", p.Status.Phase, p.Status.Conditions)
	})
	t.Logf("API pod created → Ready: %v", time.Since(start).Round(time.Millisecond))
	ids := map[string]string{} // container name → id
	for _, cs := range append(ready.Status.InitContainerStatuses, ready.Status.ContainerStatuses...) {
		ids[cs.Name] = strings.TrimPrefix(cs.ContainerID, "containerd://")
	}
	if s := ready.Status.InitContainerStatuses; len(s) != 2 || s[0].State.Terminated == nil || s[0].State.Terminated.ExitCode != 0 ||
		s[1].State.Running == nil || s[1].Started == nil || !*s[1].Started {
		t.Fatalf("init containers: %+v, want init terminated with 0, sidecar running", s)
	}

	n.kubeletLogsExec(t, pod.Name)

	esc := strings.ReplaceAll(string(created.UID), "-", "_")
	slice := "kubepods-besteffort-pod" + esc + ".slice"
	scopes := strings.Fields(n.guest(t, "cd /sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/"+slice+" && ls -d *.scope"))
	status := n.guest(t, "systemctl status --no-pager --full --lines=0 "+slice)
	for _, c := range []string{"sidecar", "app"} {
		if !strings.Contains(status, "cri-containerd-"+ids[c]+".scope") {
			t.Fatalf("systemctl status %s does not show the %s container's scope:\n%s", slice, c, status)
		}
	}
	if len(scopes) != 3 { // the sandbox's, the sidecar's, the app's
		t.Fatalf("scopes in %s: %v, want 3", slice, scopes)
	}
	t.Logf("systemctl status %s:\n%s", slice, status)

	// Deleted with grace: the final status (the watch's DELETED object)
	// has each container ended by SIGTERM with exit code 0.
	w, err := n.admin.CoreV1().Pods(n.ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: ready.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start = time.Now()
	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	final := waitDeleted(t, w, time.Minute)
	deleted := time.Since(start)
	for _, cs := range append(final.Status.InitContainerStatuses, final.Status.ContainerStatuses...) {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			t.Errorf("container %s at deletion: %+v, want terminated with exit code 0", cs.Name, cs.State)
		}
	}
	n.waitNothingLeft(t, created.UID, slice, scopes, ids["init"])
	t.Logf("pod deleted with grace %ds: gone from the API server in %v (every container exited 0), nothing left in the guest %v after the delete",
		grace, deleted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// kubeletLogsExec reads the app container's log of pod over the kubelet
// API on the guest's loopback (anonymous, AlwaysAllow; a self-signed
// certificate), forwarded to a socket on the host, and finds the
// readiness probe's requests in it; then it execs cat /etc/hostname in
// the app over SPDY, which prints the pod's name.
func (n *v2Node) kubeletLogsExec(t *testing.T, pod string) {
	t.Helper()
	ctx := t.Context()
	sock, _, err := n.ForwardUnix(ctx, "127.0.0.1:10250")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}
	api := "https://" + n.name + ":10250"
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(api + "/containerLogs/" + n.ns + "/" + pod + "/app")
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(logs), "testbox serve: GET /ready") {
		t.Fatalf("GET /containerLogs: %s %q, want the readiness probe's requests", resp.Status, logs)
	}
	u, _ := url.Parse(api + "/exec/" + n.ns + "/" + pod + "/app?command=cat&command=/etc/hostname&output=1&error=1")
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{UpgradeTransport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(rt, rt, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &stderr}); err != nil || out.String() != pod+"\n" {
		t.Fatalf("exec cat /etc/hostname: %v %q %q, want %q", err, out.String(), stderr.String(), pod+"\n")
	}
	t.Logf("kubelet API: the app's log (%d bytes, the probe's requests in it) and an exec (cat /etc/hostname: %q)", len(logs), strings.TrimSpace(out.String()))
}

// waitNothingLeft waits until nothing of pod uid is left in the guest:
// its slice and scopes (units), cgroups, mounts and shims (by the ids of
// the scopes and of the init container, and the pod's UID), its pod and
// log directories.
func (n *v2Node) waitNothingLeft(t *testing.T, uid types.UID, slice string, scopes []string, initID string) {
	t.Helper()
	grep := []string{"-e " + initID, "-e " + string(uid)}
	for _, s := range scopes {
		grep = append(grep, "-e "+strings.TrimSuffix(strings.TrimPrefix(s, "cri-containerd-"), ".scope"))
	}
	ids := strings.Join(grep, " ")
	check := "systemctl list-units --all --plain --no-legend " + slice + " " + strings.Join(scopes, " ") +
		"; find /sys/fs/cgroup -name '*" + strings.ReplaceAll(string(uid), "-", "_") + "*'; grep " + ids + " /proc/self/mountinfo" +
		"; pgrep -a containerd-shim | grep " + ids + "; ls -d /var/lib/kernelet/pods/" + string(uid) +
		" /var/log/pods/*_" + string(uid) + " 2>/dev/null; true"
	waitFor(t, 30*time.Second, "nothing of the pod left in the guest", func() (bool, error) {
		out, err := n.Run(t.Context(), check)
		return err == nil && strings.TrimSpace(out) == "", fmt.Errorf("%q %v", out, err)
	})
}

// waitDeleted returns the pod of w's DELETED event.
func waitDeleted(t *testing.T, w watch.Interface, timeout time.Duration) *v1.Pod {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the pod watch ended before the pod was deleted")
			}
			if p, isPod := ev.Object.(*v1.Pod); isPod && ev.Type == watch.Deleted {
				return p
			}
		case <-deadline:
			t.Fatalf("pod not deleted within %v", timeout)
		}
	}
}
