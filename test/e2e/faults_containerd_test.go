//go:build faults

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/status/node"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// statusOutput runs `kernelet status` against the agent.
func (n *agentNode) statusOutput(t *testing.T) string {
	t.Helper()
	out, _ := exec.Command(n.bin, "status", "--server", n.url("")).CombinedOutput()
	return string(out)
}

// startPrivateContainerd starts a containerd of the test's own (a fault
// test stops it) of the flavor KERNELET_TEST_RUNTIME selects, stopped at
// the end of the test.
func startPrivateContainerd(t *testing.T, name string) *containerd.Instance {
	t.Helper()
	return startOwnContainerd(t, name, matrixFlavor(t))
}

// Fault: containerd stopped and started again under 10 running pods. The
// runtime health check, `kernelet status` and the node's Ready condition
// go false while it is down and back once it returns; no pod restarts,
// no container or sandbox is replaced, and relist picks the pods up again.
func TestFaultContainerdRestart(t *testing.T) {
	cd := startPrivateContainerd(t, "faults-restart")
	c := newClusterNodeOn(t, cd, apiserver.Shared(t))
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("steady%d", i)
		names = append(names, name)
		m := podManifest(name, `["sleep"]`, "", 2)
		if i == 0 { // one pod on the pod network: its sandbox has CNI state
			m = strings.Replace(m, "  hostNetwork: true\n", "", 1)
		}
		writeManifest(t, c.manifests, name+".yaml", m)
	}
	c.start(t)
	before := snapshotPods(t, c.agentNode, c.rs, names...)
	c.waitNodeReady(t)
	if len(before.containers) != 10 {
		t.Fatalf("%d running containers before the fault, want 10", len(before.containers))
	}

	stopped := time.Now()
	if err := cd.StopDaemon(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("containerd stopped (SIGTERM) under 10 running pods")
	failedAfter := waitFor(t, 30*time.Second, "runtime health check fails", func() (bool, error) {
		err := c.healthCheck("runtime")
		return err != nil, errors.New("still healthy")
	})
	if out := c.statusOutput(t); !strings.Contains(out, "[-]runtime failed") {
		t.Errorf("kernelet status while containerd is down does not report the runtime check failing:\n%s", out)
	} else {
		t.Logf("kernelet status while containerd is down:\n%s", grepLines(out, "runtime"))
	}
	// The node goes NotReady once the runtime has been silent for
	// node.RuntimeDownAfter (kubelet's 30 s) and the next status is
	// computed (every 10 s).
	notReady := c.waitCondition(t, v1.NodeReady, v1.ConditionFalse, node.RuntimeDownAfter+40*time.Second)
	t.Logf("health check failed %v, node NotReady %v after the stop: %s %q", failedAfter.Round(time.Millisecond),
		time.Since(stopped).Round(time.Millisecond), notReady.Reason, notReady.Message)
	if !strings.Contains(notReady.Message, "container runtime is down") {
		t.Errorf("NotReady message %q does not say the runtime is down", notReady.Message)
	}

	started := time.Now()
	if err := cd.StartDaemon(t.Context()); err != nil {
		t.Fatal(err)
	}
	healthy := waitFor(t, 30*time.Second, "runtime health check passes again", func() (bool, error) {
		err := c.healthCheck("runtime")
		return err == nil, err
	})
	ready := c.waitCondition(t, v1.NodeReady, v1.ConditionTrue, 40*time.Second)
	t.Logf("containerd back after %v down: health check ok %v, node Ready %v after the start (%s)",
		started.Sub(stopped).Round(time.Millisecond), healthy.Round(time.Millisecond), time.Since(started).Round(time.Millisecond), ready.Reason)
	waitFor(t, 20*time.Second, "every health check and kernelet status ok", func() (bool, error) {
		if err := c.healthCheck(""); err != nil {
			return false, err
		}
		out := c.statusOutput(t)
		return strings.Contains(out, "[+]runtime ok") && !strings.Contains(out, "not connected"), errors.New(out)
	})

	// Relist recovered: the pleg has relisted since the restart, and a
	// new pod starts.
	lastSeen := func() float64 {
		for _, l := range strings.Split(agentGet(t, c.url("/metrics")), "\n") {
			if v, ok := strings.CutPrefix(l, "kubelet_pleg_last_seen_seconds "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}
	waitFor(t, 10*time.Second, "a relist after containerd came back", func() (bool, error) {
		return lastSeen() > float64(started.Unix()), fmt.Errorf("pleg last seen %v", lastSeen())
	})
	relistErrors := strings.Count(c.log(t), "PLEG relist failed")
	if relistErrors == 0 {
		t.Errorf("the agent's log has no failed relist while containerd was down")
	}
	writeManifest(t, c.manifests, "late.yaml", podManifest("late", `["sleep"]`, "", 2))
	c.waitRunning(t, 30*time.Second, "late")
	if n := strings.Count(c.log(t), "PLEG relist failed"); n != relistErrors {
		t.Errorf("relist still failing after containerd came back: %d failures logged, %d before", n, relistErrors)
	}
	t.Logf("%d failed relists logged while containerd was down (one a second), none since", relistErrors)

	after := snapshotPods(t, c.agentNode, c.rs, names...)
	before.compare(t, after, "after the containerd restart")
	t.Logf("10 pods kept their containers, sandboxes and restart counts across the containerd restart; a new pod started")

	// Pods started before and after the restart are deleted as usual.
	late := c.waitRunning(t, time.Second, "late")["late"]
	for _, p := range []struct {
		file string
		uid  types.UID
	}{{"late.yaml", late.UID}, {"steady1.yaml", after.uids["steady1"]}} {
		if err := os.Remove(c.manifests + "/" + p.file); err != nil {
			t.Fatal(err)
		}
		removed := time.Now()
		waitFor(t, 20*time.Second, "pod of "+p.file+" gone after its manifest was removed", func() (bool, error) {
			cs, sbs := podObjects(t, c.rs, p.uid)
			return len(cs)+len(sbs) == 0, fmt.Errorf("%d containers, %d sandboxes", len(cs), len(sbs))
		})
		t.Logf("pod of %s removed in %v", p.file, time.Since(removed).Round(time.Millisecond))
	}
}
