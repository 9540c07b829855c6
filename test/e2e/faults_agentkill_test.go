//go:build faults

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// faultSeed is KERNELET_FAULT_SEED when set (to replay a run), else a
// fresh seed; the test prints it either way.
func faultSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("KERNELET_FAULT_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KERNELET_FAULT_SEED=%q: not an unsigned integer: %v", s, err)
		}
		t.Logf("fault seed %d (from KERNELET_FAULT_SEED)", seed)
		return seed
	}
	seed := rand.Uint64()
	t.Logf("fault seed %d (replay with KERNELET_FAULT_SEED=%d)", seed, seed)
	return seed
}

// scratchVolume mounts an emptyDir in podManifest's container.
const scratchVolume = `    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - {name: scratch, emptyDir: {}}
`

// Fault: the agent SIGKILLed at a random point of a pod's creation or
// deletion, 20 times. After each restart the agent converges on the
// manifests: every desired pod Running with one sandbox and one container,
// nothing left of removed pods in the runtime, the cgroup tree, the pods
// dir or the log dir.
func TestFaultAgentKilled(t *testing.T) {
	const (
		iterations = 20
		// maxDelay is T: the kill comes in [0, T] after the manifest change,
		// which covers noticing the manifest, sandbox creation, the image
		// pull (imagePullPolicy Always on half the pods), container creation
		// and start, and a stop (grace 2 s; sleep exits on SIGTERM).
		maxDelay = 1500 * time.Millisecond
		settle   = 45 * time.Second
	)
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x6b65726e656c6574))
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared(t))
	logOnFailure(t, n)
	n.start(t)

	desired := map[string]bool{}
	startErrors := map[string]bool{} // pods whose restart was seen and explained
	next := 0
	start := time.Now()
	for i := range iterations {
		var action string
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range desired {
				if !yield(k) {
					return
				}
			}
		})
		if len(names) < 2 || (len(names) < 5 && rng.IntN(2) == 0) {
			name := fmt.Sprintf("k%d", next)
			next++
			// An emptyDir: a volume dir under <root-dir>/pods/<uid>.
			m := podManifest(name, `["sleep"]`, scratchVolume, 2)
			if next%2 == 0 {
				m = strings.Replace(m, "imagePullPolicy: IfNotPresent", "imagePullPolicy: Always", 1)
			}
			writeManifest(t, n.manifests, name+".yaml", m)
			desired[name] = true
			action = "add " + name
		} else {
			name := names[rng.IntN(len(names))]
			if err := os.Remove(filepath.Join(n.manifests, name+".yaml")); err != nil {
				t.Fatal(err)
			}
			delete(desired, name)
			action = "remove " + name
		}
		delay := time.Duration(rng.Int64N(int64(maxDelay) + 1))
		time.Sleep(delay) // the fault's random point, not synchronisation
		n.stop(t, syscall.SIGKILL)
		logFrom := len(n.log(t))
		n.start(t)

		// Settle: desired pods Running, nothing else left.
		want := slices.Sorted(func(yield func(string) bool) {
			for k := range desired {
				if !yield(k) {
					return
				}
			}
		})
		t0 := time.Now()
		running := n.waitRunning(t, settle, want...)
		var problems []string
		// sleep never exits: a restart is one the crash caused. The one
		// allowed is the runtime's: a StartContainer cut off by the
		// SIGKILL ends as an exited container (containerd: StartError),
		// which is restarted as any exited container.
		for _, name := range want {
			for _, c := range running[name].Status.ContainerStatuses {
				if c.RestartCount == 0 || startErrors[name] {
					continue
				}
				startErrors[name] = true
				exited := exitedInstances(t, n, rs, name)
				t.Logf("iteration %d (%s, SIGKILL after %v): pod %s container %s restartCount %d; exited instances: %v",
					i, action, delay.Round(time.Millisecond), name, c.Name, c.RestartCount, exited)
				if c.RestartCount > 1 || len(exited) != 1 || !strings.Contains(exited[0], "StartError") {
					t.Errorf("iteration %d (%s, SIGKILL after %v, seed %d): pod %s container %s restarted %d times, not after a start the SIGKILL cut off",
						i, action, delay.Round(time.Millisecond), seed, name, c.Name, c.RestartCount)
				}
			}
		}
		deadline := time.Now().Add(settle)
		for {
			_, problems = nodeLeftovers(t, n, rs, desired)
			if len(problems) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(problems) > 0 {
			t.Fatalf("iteration %d (%s, SIGKILL after %v, seed %d): %d problems %v after the restart:\n%s",
				i, action, delay.Round(time.Millisecond), seed, len(problems), settle, strings.Join(problems, "\n"))
		}
		took := time.Since(t0)
		t.Logf("iteration %2d: %-10s SIGKILL after %4dms, settled in %v: %d pods %v", i, action, delay.Milliseconds(),
			took.Round(time.Millisecond), len(want), want)
		if took > 5*time.Second { // what held it up: the restarted agent's errors
			for _, l := range strings.Split(n.log(t)[logFrom:], "\n") {
				if strings.HasPrefix(l, "E") {
					t.Logf("  %s", l)
				}
			}
		}
	}
	_, problems := nodeLeftovers(t, n, rs, desired)
	if len(problems) > 0 {
		t.Errorf("at the end: %v", problems)
	}
	// No stale series: /metrics names no removed pod.
	metrics := agentGet(t, n.url("/metrics"))
	for k := range next {
		name := fmt.Sprintf("k%d", k)
		if !desired[name] && strings.Contains(metrics, `pod="`+name+"-"+n.node+`"`) {
			t.Errorf("/metrics still has series of removed pod %s:\n%s", name, grepLines(metrics, `pod="`+name+"-"))
		}
	}
	t.Logf("%d SIGKILLs at random points (seed %d) in %v: no orphan, no duplicate; %d pods restarted once after a start the SIGKILL cut off",
		iterations, seed, time.Since(start).Round(time.Millisecond), len(startErrors))
}

// exitedInstances describes the exited containers of node n's pod name
// (reason, exit code, attempt), newest first as the runtime lists them.
func exitedInstances(t *testing.T, n *agentNode, rs internalapi.RuntimeService, name string) []string {
	t.Helper()
	cs, err := rs.ListContainers(t.Context(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{podconfig.LabelPodName: name + "-" + n.node}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		desc := fmt.Sprintf("%s attempt %d", c.Metadata.GetName(), c.Metadata.GetAttempt())
		if st, err := rs.ContainerStatus(t.Context(), c.Id, false); err == nil && st.GetStatus() != nil {
			desc += fmt.Sprintf(" exited %d %s %q (started %v)", st.Status.ExitCode, st.Status.Reason, st.Status.Message, st.Status.StartedAt != 0)
		}
		out = append(out, desc)
	}
	return out
}
