package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOOMKillAttribution: a container that allocates 64 MiB under a 32Mi
// limit is OOM-killed; kernelet run attributes the kill to its pod and
// container with a Warning OOMKilling event naming pid, comm and memcg,
// counts it in kernelet_oom_kills_total{scope="container"} and shows it in
// kernelet status — with eBPF, and with eBPF forced off (--bpf=off: the
// fallbacks are named in the log and in kernelet status). A bystander pod
// is not restarted. The kill → event latency is logged, not asserted.
func TestOOMKillAttribution(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// via is what kernelet status says the kills come from.
		via *regexp.Regexp
	}{
		{"bpf", nil, regexp.MustCompile(`OOM kills:   via bpf(\+kmsg)? \(eBPF [a-z_]+\)`)},
		{"bpf-off", []string{"--bpf=off"}, regexp.MustCompile(`OOM kills:   via [a-z_.+]*kmsg[a-z_.+]* \(fallback; eBPF forced off\)`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterNode(t)
			c.extraArgs = append(c.extraArgs, tc.args...)
			c.start(t)
			c.waitNodeReady(t)
			c.createPod(t, apiTestPod("bystander", 1, "sleep"))
			c.waitPhase(t, "bystander", v1.PodRunning, 30*time.Second)

			// The limit is the container's alone: a second container
			// without one leaves the pod cgroup unlimited (with every
			// container limited, the pod's limit, which also holds the
			// sandbox, is hit first: scope pod).
			hog := withMemory(apiTestPod("hog", 1, "alloc", "--mib", "64"), "", "32Mi")
			hog.Spec.RestartPolicy = v1.RestartPolicyNever
			hog.Spec.Containers = append(hog.Spec.Containers, v1.Container{Name: "idle", Image: hog.Spec.Containers[0].Image,
				ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"}})
			pod := c.createPod(t, hog)
			c.waitEvents(t, pod, "OOMKilling")
			msgs := c.podEvents(t, pod, "OOMKilling")
			want := regexp.MustCompile(`^Memory limit of the container reached: killed process [0-9]+ \(testbox\) in memcg /.*/pod` + string(pod.UID) + `/[0-9a-f]{64}$`)
			if len(msgs) != 1 || !want.MatchString(msgs[0]) {
				t.Fatalf("OOMKilling events %q, want one matching %s", msgs, want)
			}
			t.Logf("event: %s", msgs[0])
			series := `kernelet_oom_kills_total{container="app",namespace="` + c.ns + `",pod="hog",scope="container"} 1`
			if m := c.metrics(t); !strings.Contains(m, series+"\n") {
				t.Fatalf("metrics lack %s:\n%s", series, grepLines(m, "kernelet_oom_kills_total"))
			}
			log := c.log(t)
			t.Logf("agent's OOM log:\n%s", grepLines(log, "OOM kill"))
			out, err := exec.Command(c.bin, "status", "--server", c.url("")).CombinedOutput()
			if err != nil {
				t.Fatalf("kernelet status: %v\n%s", err, out)
			}
			st := string(out)
			if !tc.via.MatchString(st) || !strings.Contains(st, c.ns+"/hog/app scope=container") {
				t.Fatalf("kernelet status does not show the sources (%s) and the kill:\n%s", tc.via, st)
			}
			t.Logf("kernelet status, OOM part:\n%s", grepLines(st, "OOM kills:")+grepLines(st, "scope="))
			if tc.args != nil && !strings.Contains(log, "replaced by fallbacks") {
				t.Errorf("the log does not name the fallbacks:\n%s", grepLines(log, "OOM kills"))
			}
			by, err := c.getPod(t, "bystander")
			if err != nil {
				t.Fatal(err)
			}
			if len(by.Status.ContainerStatuses) != 1 || by.Status.ContainerStatuses[0].RestartCount != 0 || by.Status.Phase != v1.PodRunning {
				t.Fatalf("bystander disturbed: %+v", by.Status)
			}
			// The hog pod's other container runs on, nothing restarted (and
			// no start is in flight when the agent stops).
			waitFor(t, 30*time.Second, "hog's idle container running, app terminated, no restarts", func() (bool, error) {
				p, err := c.getPod(t, "hog")
				if err != nil {
					return false, err
				}
				state := map[string]v1.ContainerStatus{}
				for _, cs := range p.Status.ContainerStatuses {
					state[cs.Name] = cs
				}
				app, idle := state["app"], state["idle"]
				if app.RestartCount != 0 || idle.RestartCount != 0 {
					t.Fatalf("restarts: %+v", p.Status.ContainerStatuses)
				}
				if app.State.Terminated == nil || idle.State.Running == nil {
					return false, fmt.Errorf("app %+v, idle %+v", app.State, idle.State)
				}
				if r := app.State.Terminated.Reason; r != "OOMKilled" {
					t.Fatalf("app terminated with reason %q, want OOMKilled", r)
				}
				return true, nil
			})
			if tc.args == nil {
				testOOMCounterRecreated(t, c)
			}
		})
	}
}

// testOOMCounterRecreated: a container re-created after its OOM kill
// (restartPolicy OnFailure) and killed again adds to the same
// kernelet_oom_kills_total series (keyed by names, not container ids).
func testOOMCounterRecreated(t *testing.T, c *clusterNode) {
	hog := withMemory(apiTestPod("rehog", 1, "alloc", "--mib", "64"), "", "32Mi")
	hog.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	pod := c.createPod(t, hog)
	series := `kernelet_oom_kills_total{container="app",namespace="` + c.ns + `",pod="rehog",scope="pod"} `
	waitFor(t, 60*time.Second, "two OOM kills of rehog/app counted in one series", func() (bool, error) {
		m := c.metrics(t)
		return strings.Contains(m, series+"2\n"), fmt.Errorf("have:\n%s", grepLines(m, `pod="rehog"`))
	})
	// The events are posted after the count, asynchronously: wait for both.
	var msgs []string
	waitFor(t, 30*time.Second, "two OOMKilling events of rehog, of different containers", func() (bool, error) {
		msgs = c.podEvents(t, pod, "OOMKilling")
		return len(msgs) >= 2 && msgs[0] != msgs[1], fmt.Errorf("events %q", msgs)
	})
	t.Logf("re-created container's kills: %q", msgs)
	zero := int64(0)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), "rehog", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "rehog", pod.UID, 60*time.Second)
}
