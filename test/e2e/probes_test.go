package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// TestProbes runs probes and lifecycle hooks on a kernelet node of the
// real kube-apiserver, with real containerd: a liveness exec probe that
// starts failing restarts the container; a readiness httpGet probe and a
// grpc probe flip Ready true then false; a startup probe holds liveness
// back; an https postStart hook reaches another pod, a failing one is
// reported, and a sleep preStop hook delays the stop.
func TestProbes(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	t.Run("LivenessExecRestarts", func(t *testing.T) { testProbeLiveness(t, c) })
	t.Run("ReadinessHTTP", func(t *testing.T) { testProbeReadinessHTTP(t, c) })
	t.Run("StartupDelaysLiveness", func(t *testing.T) { testProbeStartup(t, c) })
	t.Run("GRPC", func(t *testing.T) { testProbeGRPC(t, c) })
	t.Run("Hooks", func(t *testing.T) { testProbeHooks(t, c) })
	t.Run("ReadinessWhileTerminating", func(t *testing.T) { testProbeTerminating(t, c) })
	t.Run("SidecarStartupProbe", func(t *testing.T) { testProbeSidecarStartup(t, c) })
}

// The app container of a pod waits until its sidecar's startup probe
// passed.
func testProbeSidecarStartup(t *testing.T, c *clusterNode) {
	p := shellPod("sidecar-startup", "exec /testbox sleep")
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []v1.Container{{Name: "side", Image: p.Spec.Containers[0].Image, ImagePullPolicy: v1.PullIfNotPresent,
		RestartPolicy: &always, Command: []string{"/bin/sh", "-c", "sleep 5; touch /tmp/up; exec /testbox sleep"},
		StartupProbe: execProbe(1, 60, "cat", "/tmp/up")}}
	pod := c.createPod(t, p)
	sidecar := func(p *v1.Pod) v1.ContainerStatus {
		if len(p.Status.InitContainerStatuses) == 0 {
			return v1.ContainerStatus{}
		}
		return p.Status.InitContainerStatuses[0]
	}
	c.waitStatus(t, pod.Name, "sidecar running, not started; app waiting", 60*time.Second, func(p *v1.Pod) bool {
		s := sidecar(p)
		return s.State.Running != nil && s.Started != nil && !*s.Started && firstStatus(p).State.Waiting != nil
	})
	running := c.waitStatus(t, pod.Name, "app running", 60*time.Second, func(p *v1.Pod) bool { return firstStatus(p).State.Running != nil })
	if s := sidecar(running); s.Started == nil || !*s.Started {
		t.Fatalf("app running before the sidecar started: sidecar %+v", s)
	}
	// The sidecar cannot pass its probe before 5 s; API times are whole
	// seconds.
	side, app := sidecar(running).State.Running.StartedAt.Time, firstStatus(running).State.Running.StartedAt.Time
	if app.Sub(side) < 4*time.Second {
		t.Errorf("app started %v after the sidecar, before its startup probe could pass", app.Sub(side))
	}
}

// A pod whose readiness probe fails during its grace period is reported
// not Ready while it terminates.
func testProbeTerminating(t *testing.T, c *clusterNode) {
	p := shellPod("terminating", "trap 'rm -f /tmp/ready; sleep 15; exit 0' TERM; touch /tmp/ready; while true; do sleep 1; done")
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers[0].ReadinessProbe = execProbe(1, 1, "cat", "/tmp/ready")
	pod := c.createPod(t, p)
	c.waitStatus(t, pod.Name, "Ready", 60*time.Second, podReady)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitStatus(t, pod.Name, "not Ready while terminating", 30*time.Second, func(p *v1.Pod) bool {
		return p.DeletionTimestamp != nil && !podReady(p) && !firstStatus(p).Ready
	})
	c.waitGone(t, pod.Name, pod.UID, 60*time.Second)
}

// reachPods lets the agent (on the host) reach the pod network once a
// pod-network sandbox exists: probes and hooks go to pod IPs.
func reachPods(t *testing.T, c *clusterNode, runningPod string) {
	t.Helper()
	c.waitPhase(t, runningPod, v1.PodRunning, 60*time.Second)
	if err := containerd.Shared(t).ReachPods(); err != nil {
		t.Fatal(err)
	}
}

func execProbe(period, failures int32, cmd ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}},
		PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 5, SuccessThreshold: 1}
}

func shellPod(name, script string) *v1.Pod {
	pod := apiTestPod(name, 2)
	pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c", script}
	return pod
}

// podEvents lists the messages of pod's events with reason.
func (c *clusterNode) podEvents(t *testing.T, pod *v1.Pod, reason string) []string {
	t.Helper()
	evs, err := c.admin.CoreV1().Events(c.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// waitEventMessage waits for an event of pod with reason whose message
// starts with prefix.
func (c *clusterNode) waitEventMessage(t *testing.T, pod *v1.Pod, reason, prefix string) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("%s event %q of %s", reason, prefix, pod.Name), func() (bool, error) {
		msgs := c.podEvents(t, pod, reason)
		for _, m := range msgs {
			if strings.HasPrefix(m, prefix) {
				return true, nil
			}
		}
		return false, fmt.Errorf("have %q", msgs)
	})
}

// waitStatus waits until the pod's status passes cond and returns it.
func (c *clusterNode) waitStatus(t *testing.T, name, what string, timeout time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, timeout, name+": "+what, func() (bool, error) {
		var err error
		if pod, err = c.getPod(t, name); err != nil {
			return false, err
		}
		return cond(pod), fmt.Errorf("phase %s conditions %v statuses %v", pod.Status.Phase, conditionSummary(pod), statusSummary(pod))
	})
	return pod
}

func conditionSummary(pod *v1.Pod) string {
	var parts []string
	for _, c := range pod.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return strings.Join(parts, ",")
}

func statusSummary(pod *v1.Pod) string {
	var parts []string
	for _, cs := range pod.Status.ContainerStatuses {
		started := cs.Started != nil && *cs.Started
		parts = append(parts, fmt.Sprintf("%s(running=%v started=%v ready=%v restarts=%d)", cs.Name, cs.State.Running != nil, started, cs.Ready, cs.RestartCount))
	}
	return strings.Join(parts, " ")
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func containersReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.ContainersReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func firstStatus(pod *v1.Pod) v1.ContainerStatus {
	if len(pod.Status.ContainerStatuses) == 0 {
		return v1.ContainerStatus{}
	}
	return pod.Status.ContainerStatuses[0]
}

// A liveness exec probe that starts failing after 5 s restarts the
// container, with Unhealthy and Killing events.
func testProbeLiveness(t *testing.T, c *clusterNode) {
	p := shellPod("liveness", "touch /tmp/healthy; sleep 5; rm /tmp/healthy; exec /testbox sleep")
	grace := int64(1)
	lp := execProbe(1, 1, "cat", "/tmp/healthy")
	lp.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers[0].LivenessProbe = lp
	pod := c.createPod(t, p)
	c.waitPhase(t, pod.Name, v1.PodRunning, 60*time.Second)
	got := c.waitStatus(t, pod.Name, "restarted once", 90*time.Second, func(p *v1.Pod) bool { return firstStatus(p).RestartCount >= 1 })
	cs := firstStatus(got)
	t.Logf("restartCount %d; last termination %+v", cs.RestartCount, cs.LastTerminationState.Terminated)
	if cs.RestartCount != 1 {
		t.Logf("restartCount %d: the new container failed again meanwhile", cs.RestartCount)
	}
	c.waitEventMessage(t, pod, "Unhealthy", "Liveness probe failed: ")
	c.waitEventMessage(t, pod, "Killing", "Container app failed liveness probe, will be restarted")
}

// A readiness httpGet probe makes the container and the pod Ready, and
// not Ready once the workload answers 503.
func testProbeReadinessHTTP(t *testing.T, c *clusterNode) {
	p := apiTestPod("readiness", 2, "serve", "--http", ":8080", "--fail-after", "20s")
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("web")}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 2}
	pod := c.createPod(t, p)
	reachPods(t, c, pod.Name)
	c.waitStatus(t, pod.Name, "Ready", 60*time.Second, func(p *v1.Pod) bool {
		return podReady(p) && containersReady(p) && firstStatus(p).Ready
	})
	c.waitStatus(t, pod.Name, "not Ready after the workload fails", 60*time.Second, func(p *v1.Pod) bool {
		return !podReady(p) && !containersReady(p) && !firstStatus(p).Ready && firstStatus(p).State.Running != nil
	})
	c.waitEventMessage(t, pod, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	if n := firstStatus(mustGet(t, c, pod.Name)).RestartCount; n != 0 {
		t.Errorf("a readiness failure restarted the container (restartCount %d)", n)
	}
}

// A startup probe holds the liveness probe (that would fail at once) back
// until the container has started.
func testProbeStartup(t *testing.T, c *clusterNode) {
	p := shellPod("startup", "sleep 6; touch /tmp/started; exec /testbox sleep")
	p.Spec.Containers[0].StartupProbe = execProbe(1, 60, "cat", "/tmp/started")
	p.Spec.Containers[0].LivenessProbe = execProbe(1, 1, "cat", "/tmp/started")
	pod := c.createPod(t, p)
	// For 6 s the container runs and is neither started nor ready.
	c.waitStatus(t, pod.Name, "running, not started, not ready", 60*time.Second, func(p *v1.Pod) bool {
		cs := firstStatus(p)
		return cs.State.Running != nil && cs.Started != nil && !*cs.Started && !cs.Ready && !podReady(p)
	})
	started := c.waitStatus(t, pod.Name, "started and ready", 60*time.Second, func(p *v1.Pod) bool {
		cs := firstStatus(p)
		return cs.Started != nil && *cs.Started && cs.Ready && podReady(p)
	})
	if n := firstStatus(started).RestartCount; n != 0 {
		t.Fatalf("liveness ran before the startup probe passed: restartCount %d (events %q)", n, c.podEvents(t, pod, "Killing"))
	}
	if msgs := c.podEvents(t, pod, "Unhealthy"); len(msgs) == 0 || !strings.HasPrefix(msgs[0], "Startup probe failed") {
		t.Errorf("Unhealthy events %q, want Startup probe failures only", msgs)
	} else {
		for _, m := range msgs {
			if strings.HasPrefix(m, "Liveness") {
				t.Errorf("liveness probed before the container started: %q", m)
			}
		}
	}
}

// A grpc readiness probe against testbox's gRPC health server passes,
// then fails once it answers NOT_SERVING.
func testProbeGRPC(t *testing.T, c *clusterNode) {
	p := apiTestPod("grpc", 2, "serve", "--grpc", ":9000", "--fail-after", "20s")
	svc := "kernelet"
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Service: &svc}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 2}
	pod := c.createPod(t, p)
	reachPods(t, c, pod.Name)
	c.waitStatus(t, pod.Name, "Ready", 60*time.Second, podReady)
	c.waitStatus(t, pod.Name, "not Ready after NOT_SERVING", 60*time.Second, func(p *v1.Pod) bool { return !podReady(p) })
	c.waitEventMessage(t, pod, "Unhealthy", `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`)
}

func mustGet(t *testing.T, c *clusterNode, name string) *v1.Pod {
	t.Helper()
	p, err := c.getPod(t, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// containerLog reads what container wrote of pod, from the node's pod
// logs directory.
func (c *clusterNode) containerLog(pod *v1.Pod, container string) (string, error) {
	files, err := filepath.Glob(filepath.Join(podconfig.PodLogDir(c.logs, pod.Namespace, pod.Name, string(pod.UID)), container, "*.log"))
	if err != nil || len(files) == 0 {
		return "", errors.Join(err, errors.New("no log file"))
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		all.Write(b)
	}
	return all.String(), nil
}

// An https postStart hook reaches a server pod (self-signed certificate);
// a failing postStart hook is reported and kills the container; a sleep
// preStop hook holds the stop back for its seconds.
func testProbeHooks(t *testing.T, c *clusterNode) {
	sp := apiTestPod("hook-server", 2, "serve", "--https", ":8443")
	sp.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(8443)}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1}
	server := c.createPod(t, sp)
	reachPods(t, c, server.Name)
	ready := c.waitStatus(t, server.Name, "Ready", 60*time.Second, podReady)
	ip := ready.Status.PodIP

	hp := apiTestPod("hooked", 30, "sleep")
	hp.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: ip, Port: intstr.FromInt(8443), Path: "/poststart?from=kernelet"}},
		PreStop:   &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}},
	}
	hooked := c.createPod(t, hp)
	c.waitPhase(t, hooked.Name, v1.PodRunning, 60*time.Second)
	waitFor(t, 30*time.Second, "the https postStart request in the server's log", func() (bool, error) {
		log, err := c.containerLog(server, "app")
		return strings.Contains(log, "GET /poststart?from=kernelet"), err
	})
	if msgs := c.podEvents(t, hooked, "FailedPostStartHook"); len(msgs) > 0 {
		t.Errorf("FailedPostStartHook: %q", msgs)
	}

	fp := apiTestPod("hook-fails", 2, "sleep")
	fp.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/sh", "-c", "exit 3"}}}}
	failing := c.createPod(t, fp)
	c.waitEventMessage(t, failing, "FailedPostStartHook", "PostStartHook failed")
	c.waitEventMessage(t, failing, "Killing", "FailedPostStartHook")

	// testbox sleep exits at once on SIGTERM: the pod cannot be gone
	// before its 3 s preStop sleep ended.
	start := time.Now()
	if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), hooked.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := c.waitGone(t, hooked.Name, hooked.UID, 60*time.Second)
	t.Logf("pod with a 3 s sleep preStop hook gone %v after the delete", time.Since(start).Round(time.Millisecond))
	if gone < 3*time.Second {
		t.Errorf("pod gone %v after the delete, before its 3 s preStop sleep ended", gone)
	}
	if msgs := c.podEvents(t, hooked, "FailedPreStopHook"); len(msgs) > 0 {
		t.Errorf("FailedPreStopHook: %q", msgs)
	}
}
