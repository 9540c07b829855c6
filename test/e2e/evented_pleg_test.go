package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
)

// metricValue is the value of the sample named series (with its labels,
// as the exposition writes them) in the agent's /metrics, -1 when absent
// or not served (yet).
func (n *agentNode) metricValue(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := agentClient.Get(n.url("/metrics"))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", l, err)
			}
			return f
		}
	}
	return -1
}

// waitPod polls /pods until the named pod satisfies cond.
func (n *agentNode) waitPod(t *testing.T, name, what string, timeout time.Duration, cond func(v1.Pod) bool) v1.Pod {
	t.Helper()
	var last v1.Pod
	waitFor(t, timeout, name+" "+what, func() (bool, error) {
		l, err := n.pods(t.Context())
		if err != nil {
			return false, err
		}
		for _, p := range l.Items {
			if p.Name == name+"-"+n.node {
				last = p
				return cond(p), fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
			}
		}
		return false, fmt.Errorf("no pod %s", name)
	})
	return last
}

// exitingPod is a pod whose only container exits with code after a delay
// and is not restarted.
func exitingPod(name string, code int, after time.Duration) string {
	m := podManifest(name, fmt.Sprintf(`["exit", "--code", "%d", "--after", "%s"]`, code, after), "", 2)
	return strings.Replace(m, "spec:\n", "spec:\n  restartPolicy: Never\n", 1)
}

// diedFromEvent counts the log lines of a ContainerDied the PLEG emitted
// from a runtime event (CONTAINER_STOPPED_EVENT), for container id when
// set.
func diedFromEvent(log, id string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Pod lifecycle event from a runtime event") && strings.Contains(l, `event="ContainerDied"`) &&
			strings.Contains(l, `runtimeEvent="CONTAINER_STOPPED_EVENT"`) && (id == "" || strings.Contains(l, id)) {
			n++
		}
	}
	return n
}

// TestAgentEventedPLEG runs `kernelet run` (plegMode evented, the default)
// on a containerd 2 of its own: the event stream opens and drives the
// PLEG, a pod starts, a container's exit is noticed from the runtime's
// event (the pod turns Failed with the exit code), and when containerd
// stops the PLEG falls back to the every-second relist, then goes back to
// events once containerd is back, where the next exit is again noticed
// from its event; the running pod is not restarted.
func TestAgentEventedPLEG(t *testing.T) {
	cd := startOwnContainerd(t, "evented", containerd.Containerd2) // the test stops and starts it
	n, _, _ := newAgentWithCleanup(t, cd)
	n.extraArgs = []string{"-v", "3"} // the PLEG's per-event lines
	writeManifest(t, n.manifests, "steady.yaml", podManifest("steady", `["sleep"]`, "", 2))
	n.start(t)
	waitFor(t, 60*time.Second, "events driving the PLEG, logged", func() (bool, error) {
		return n.metricValue(t, "kernelet_pleg_events_active") == 1 &&
				strings.Contains(n.log(t), "Container event stream open; events drive the PLEG"),
			fmt.Errorf("kernelet_pleg_events_active %v", n.metricValue(t, "kernelet_pleg_events_active"))
	})
	n.waitRunning(t, 90*time.Second, "steady")

	checkExit := func(name string) {
		t.Helper()
		writeManifest(t, n.manifests, name+".yaml", exitingPod(name, 3, 3*time.Second))
		p := n.waitPod(t, name, "failed with exit code 3", 90*time.Second, func(p v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].State.Terminated != nil && p.Status.ContainerStatuses[0].State.Terminated.ExitCode == 3
		})
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		if diedFromEvent(n.log(t), id) == 0 {
			t.Errorf("%s: the exit of container %s was not noticed from a runtime event; log:\n%s", name, id, grepLines(n.log(t), "runtime event"))
		} else {
			t.Logf("%s: container %s exit noticed from its CONTAINER_STOPPED_EVENT", name, id)
		}
	}
	checkExit("exiter")

	if err := cd.StopDaemon(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the fallback to relist, logged", func() (bool, error) {
		return n.metricValue(t, "kernelet_pleg_events_active") == 0 &&
				n.metricValue(t, "kubelet_evented_pleg_connection_error_count") >= 1 &&
				strings.Contains(n.log(t), "Container event stream broke; relisting every period until it is back"),
			fmt.Errorf("kernelet_pleg_events_active %v, stream errors %v", n.metricValue(t, "kernelet_pleg_events_active"),
				n.metricValue(t, "kubelet_evented_pleg_connection_error_count"))
	})
	if err := cd.StartDaemon(t.Context()); err != nil {
		t.Fatal(err)
	}
	back := waitFor(t, 90*time.Second, "events driving the PLEG again", func() (bool, error) {
		ok := n.metricValue(t, "kernelet_pleg_events_active") == 1 && n.metricValue(t, "kubelet_evented_pleg_connection_success_count") >= 2
		return ok, fmt.Errorf("active %v, connections %v", n.metricValue(t, "kernelet_pleg_events_active"),
			n.metricValue(t, "kubelet_evented_pleg_connection_success_count"))
	})
	t.Logf("events drive the PLEG again %v after containerd's start; %v stream errors counted", back.Round(time.Millisecond),
		n.metricValue(t, "kubelet_evented_pleg_connection_error_count"))
	checkExit("late")
	steady := n.waitRunning(t, 30*time.Second, "steady")["steady"]
	if rc := steady.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("steady restarted %d times across the containerd restart", rc)
	}
}
