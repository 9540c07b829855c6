package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// groupOOMPod is a Burstable pod whose container app runs three
// processes — a shell (the container's PID 1) waiting for a sleeping
// testbox and for a testbox allocating 64 MiB under app's 32Mi limit — and
// whose container idle has no limit (so that the pod cgroup is unlimited
// and the OOM is the container's). The kernel's OOM killer picks the
// allocating process. With memory.oom.group=1 (cgroup v2, kubelet's
// default) it kills every process of the container: the shell too, so
// the container ends OOMKilled and restarts (OnFailure). Without it
// (cgroup v1, or singleProcessOOMKill) only the allocating process dies:
// the shell goes on waiting for its sleeping child and the container runs.
func groupOOMPod(name string) *v1.Pod {
	pod := withMemory(apiTestPod(name, 1), "", "32Mi")
	pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	app := &pod.Spec.Containers[0]
	app.Command = []string{"/bin/sh", "-c", "/testbox sleep & /testbox alloc --mib 64; wait"}
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "idle", Image: images.TestboxImage,
		ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"}})
	return pod
}

// oomKillingEvents are the OOMKilling events of container ctr of the pod
// with uid: their messages, oldest first, each as many times as the
// event's count.
func oomKillingEvents(ctx context.Context, admin kubernetes.Interface, ns, uid, ctr string) ([]string, error) {
	evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.uid", uid),
		fields.OneTermEqualSelector("reason", "OOMKilling")).String()})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(evs.Items, func(a, b v1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	var msgs []string
	for _, e := range evs.Items {
		// The recorder folds a repeated message into one Event's count.
		for range max(e.Count, 1) {
			if e.InvolvedObject.FieldPath == "spec.containers{"+ctr+"}" {
				msgs = append(msgs, e.Message)
			}
		}
	}
	return msgs, nil
}

var killedComm = regexp.MustCompile(`killed process [0-9]+ \(([^)]*)\)`)

// killedComms are the commands of the processes the OOMKilling messages
// name, sorted, without repeats.
func killedComms(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		if s := killedComm.FindStringSubmatch(m); s != nil && !slices.Contains(out, s[1]) {
			out = append(out, s[1])
		}
	}
	slices.Sort(out)
	return out
}

// oomKillsOf is kernelet_oom_kills_total of a container's kills
// (scope container) in a /metrics text, -1 without the series.
func oomKillsOf(metrics, ns, pod, ctr string) float64 {
	return metricValue(metrics, "kernelet_oom_kills_total", `container="`+ctr+`"`, `namespace="`+ns+`"`, `pod="`+pod+`"`, `scope="container"`)
}

// TestOOMKillMultiProcess runs groupOOMPod on this host (the memory
// controller is cgroup v1: memory.oom.group does not exist, kernelet
// sets it only on v2) with each containerd: the kernel kills only the
// allocating process; kernelet attributes that kill to the pod and
// container app (the OOMKilling event naming testbox, nothing else;
// kernelet_oom_kills_total the same count), and the container runs on —
// its shell and sleeping child survive, no restart — which is what
// kubelet's nodes do on v1 as well. A third container, solo, whose only
// process allocates, ends OOMKilled (lastState, exit 137) and restarts,
// its kills counted as its OOMKilling events. The v2 node's OOMGroup subtest of
// TestV2Node checks the group kill.
func TestOOMKillMultiProcess(t *testing.T) {
	for _, f := range []containerd.Flavor{containerd.Containerd1, containerd.Containerd2} {
		t.Run(string(f), func(t *testing.T) {
			c := newClusterNodeOn(t, containerd.SharedFlavor(t, f), apiserver.Shared(t))
			c.start(t)
			c.waitNodeReady(t)
			start := time.Now()
			// With a third container, solo: the allocating testbox alone
			// (PID 1) under a 32Mi limit, killed and restarted.
			group := groupOOMPod("group")
			solo := group.Spec.Containers[0]
			solo.Name, solo.Command, solo.Args = "solo", nil, []string{"alloc", "--mib", "64"}
			group.Spec.Containers = append(group.Spec.Containers, solo)
			pod := c.createPod(t, group)
			var msgs []string
			waitFor(t, 90*time.Second, "OOMKilling event of container app", func() (bool, error) {
				var err error
				msgs, err = oomKillingEvents(t.Context(), c.admin, c.ns, string(pod.UID), "app")
				return len(msgs) > 0, err
			})
			t.Logf("OOM kill attributed %v after the pod's creation: %q", time.Since(start).Round(time.Millisecond), msgs)
			want := regexp.MustCompile(`^Memory limit of the container reached: killed process [0-9]+ \(testbox\) in memcg /.*/pod` + string(pod.UID) + `/[0-9a-f]{64}$`)
			for _, m := range msgs {
				if !want.MatchString(m) {
					t.Fatalf("OOMKilling events %q, want each matching %s", msgs, want)
				}
			}
			waitFor(t, 20*time.Second, "kernelet_oom_kills_total = the OOMKilling events", func() (bool, error) {
				v := oomKillsOf(c.metrics(t), c.ns, "group", "app")
				msgs, _ = oomKillingEvents(t.Context(), c.admin, c.ns, string(pod.UID), "app")
				return int(v) == len(msgs), fmt.Errorf("kernelet_oom_kills_total %v, %d events", v, len(msgs))
			})
			// solo's kill: its lastState OOMKilled, exit 137, attributed.
			var last *v1.ContainerStateTerminated
			waitFor(t, 90*time.Second, "solo OOMKilled and restarted", func() (bool, error) {
				p, err := c.getPod(t, "group")
				if err != nil {
					return false, err
				}
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == "solo" && cs.RestartCount > 0 {
						last = cs.LastTerminationState.Terminated
					}
				}
				return last != nil, fmt.Errorf("statuses %s", statusSummary(p))
			})
			if last.Reason != "OOMKilled" || last.ExitCode != 137 {
				t.Fatalf("solo's last state %s exit %d, want OOMKilled 137", last.Reason, last.ExitCode)
			}
			waitFor(t, 20*time.Second, "solo's OOMKilling events counted", func() (bool, error) {
				soloMsgs, err := oomKillingEvents(t.Context(), c.admin, c.ns, string(pod.UID), "solo")
				v := oomKillsOf(c.metrics(t), c.ns, "group", "solo")
				return err == nil && len(soloMsgs) > 0 && int(v) == len(soloMsgs),
					fmt.Errorf("kernelet_oom_kills_total %v, events %q %v", v, soloMsgs, err)
			})
			t.Logf("solo: lastState %s exit %d, its kills attributed", last.Reason, last.ExitCode)
			// No group kill on v1: app's shell runs on, nothing restarted.
			// (Checked for a while: the container status would turn
			// Terminated within a relist if the shell had died.)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				p, err := c.getPod(t, "group")
				if err != nil {
					t.Fatal(err)
				}
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name != "solo" && (cs.RestartCount != 0 || cs.State.Running == nil) {
						t.Fatalf("container %s: restarts %d, state %+v: want it running (no memory.oom.group on cgroup v1)", cs.Name, cs.RestartCount, cs.State)
					}
				}
				time.Sleep(500 * time.Millisecond)
			}
			out, err := c.execContainer(t, pod, "app", `cat /proc/1/comm; for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <$f; echo; done | grep -c '^/testbox sleep'`)
			if err != nil || strings.Fields(out) == nil || strings.Join(strings.Fields(out), " ") != "sh 1" {
				t.Fatalf("app's PID 1 and sleeping testbox after the kill: %q %v, want sh and 1", out, err)
			}
			t.Logf("after the kill app's shell and its sleeping child run on (v1: single-process kill)")
		})
	}
}
