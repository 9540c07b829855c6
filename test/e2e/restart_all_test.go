package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// restartAllPod is a static pod manifest (restartPolicy Never) whose init
// and regular containers are given as YAML list items; every container
// mounts the emptyDir "work" at /mnt for its marker files.
func restartAllPod(name, inits, ctrs string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  volumes:
  - {name: work, emptyDir: {}}
  initContainers:
%s  containers:
%s`, name, inits, ctrs)
}

// restartAllCtr is one container item: name runs script under /bin/sh
// with the container-level lines (restartPolicy, rules) given.
func restartAllCtr(name, script, lines string) string {
	return fmt.Sprintf(`  - name: %s
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", %q]
    volumeMounts:
    - {name: work, mountPath: /mnt}
%s`, name, images.TestboxImage, script, lines)
}

const (
	sidecarLines = "    restartPolicy: Always\n"
	// restartAllOn42 restarts all containers when the container exits 42.
	restartAllOn42 = `    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
`
	// restartAllOnFailure restarts all containers on any non-zero exit,
	// 137 included: the code of a container the reset itself kills.
	restartAllOnFailure = `    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: NotIn, values: [0]}
`
	sleepLong = "sleep 10000"
)

// RestartAllContainers (kubelet's RestartAllContainersOnContainerExits,
// upstream's "Pod Extended (RestartAllContainers)" specs) on real
// containerd, pods with restartPolicy Never:
//   - regular: init, sidecar, then source (exits 42 at once the first
//     time, with a RestartAllContainers rule on 42) and regular: every
//     container restarts once (the init container runs again first), in
//     the same sandbox — regular too when it was created after source's
//     exit;
//   - initexit: sidecar, init, source-init (exits 42 once), then regular:
//     the init sequence runs again, then regular starts;
//   - noloop: source (exits 3 once) and regular, both with a rule on any
//     failure: the reset kills regular (137) and that does not trigger
//     another reset — each restarts exactly once and stays running.
//
// Along the way the pods never look Failed or Succeeded, every container
// ends with restartCount 1 and its exit before the reset as last state,
// the AllContainersRestarting condition ends False, and nothing waits
// for the 30 s grace (the reset kills with grace 0).
func TestAgentRestartAllContainers(t *testing.T) {
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared(t))
	// As upstream's: the first run exits at once, possibly before the
	// agent has created the next container — which the reset must
	// restart too (the unit tests pin that case down; here it is a race).
	const exitAtOnce = "if [ -f /mnt/done ]; then sleep 10000; else touch /mnt/done; exit 42; fi"
	once := func(marker, code string) string {
		return fmt.Sprintf("if [ -f /mnt/%s ]; then sleep 10000; else touch /mnt/%s; sleep 1; exit %s; fi", marker, marker, code)
	}
	writeManifest(t, n.manifests, "regular.yaml", restartAllPod("regular",
		restartAllCtr("init", "exit 0", "")+restartAllCtr("sidecar", sleepLong, sidecarLines),
		restartAllCtr("source", exitAtOnce, restartAllOn42)+restartAllCtr("regular", sleepLong, "")))
	writeManifest(t, n.manifests, "initexit.yaml", restartAllPod("initexit",
		restartAllCtr("sidecar", sleepLong, sidecarLines)+restartAllCtr("init", "exit 0", "")+
			restartAllCtr("source-init", "if [ -f /mnt/done ]; then exit 0; else touch /mnt/done; exit 42; fi", restartAllOn42),
		restartAllCtr("regular", sleepLong, "")))
	writeManifest(t, n.manifests, "noloop.yaml", restartAllPod("noloop", "",
		restartAllCtr("source", once("done", "3"), restartAllOnFailure)+restartAllCtr("regular", sleepLong, restartAllOnFailure)))
	restarted := map[string][]string{
		"regular":  {"init", "sidecar", "source", "regular"},
		"initexit": {"sidecar", "init", "source-init"},
		"noloop":   {"source", "regular"},
	}
	start := time.Now()
	n.start(t)

	// Done: every container named restarted once with a last state, and
	// the regular containers running.
	done := func(p v1.Pod) bool {
		all := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
		for _, name := range restarted[strings.TrimSuffix(p.Name, "-"+n.node)] {
			cs, ok := statusNamed(all, name)
			if !ok || cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil {
				return false
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return false
			}
		}
		return p.Status.Phase == v1.PodRunning
	}
	final := map[string]v1.Pod{}
	phases := map[string][]v1.PodPhase{}
	deadline := time.Now().Add(60 * time.Second)
	for len(final) < len(restarted) {
		if l, err := n.pods(t.Context()); err == nil {
			for _, p := range l.Items {
				name := strings.TrimSuffix(p.Name, "-"+n.node)
				if seen := phases[name]; len(seen) == 0 || seen[len(seen)-1] != p.Status.Phase {
					phases[name] = append(seen, p.Status.Phase)
				}
				if _, ok := final[name]; !ok && restarted[name] != nil && done(p) {
					final[name] = p
					t.Logf("%s done after %v: phases %v", name, time.Since(start).Round(time.Millisecond), phases[name])
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods not done after 60 s: done %d of %d, phases %v\n%s", len(final), len(restarted), phases, n.log(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the resets took %v: longer than the 30 s grace they must not wait for", d)
	}

	// A few seconds more: no second reset (the noloop pod's regular
	// container was killed with 137, which its rule matches).
	time.Sleep(5 * time.Second)
	l, err := n.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		name := strings.TrimSuffix(p.Name, "-"+n.node)
		if restarted[name] == nil {
			continue
		}
		for _, ph := range phases[name] {
			if ph == v1.PodFailed || ph == v1.PodSucceeded {
				t.Errorf("%s went through %s: %v", name, ph, phases[name])
			}
		}
		checkRestartedOnce(t, name, p, restarted[name])
		cs, sbs := podObjects(t, rs, p.UID)
		if len(sbs) != 1 {
			t.Errorf("%s: %d sandboxes, want 1 (the pod restarts in place)", name, len(sbs))
		}
		checkRuntimeInstances(t, name, p, cs)
	}
}

// triggerExit is the exit code of each pod's trigger, by pod/container.
var triggerExit = map[string]int32{"regular/source": 42, "initexit/source-init": 42, "noloop/source": 3}

// checkRestartedOnce checks pod name's final status: each container in
// names restarted exactly once with its exit before the reset as last
// state (the trigger's: its rule's code), regular containers running,
// and the AllContainersRestarting condition False.
func checkRestartedOnce(t *testing.T, name string, p v1.Pod, names []string) {
	t.Helper()
	all := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, cn := range names {
		cs, _ := statusNamed(all, cn)
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || last == nil {
			t.Errorf("%s/%s: restartCount %d, last state %+v; want 1 and a last state", name, cn, cs.RestartCount, last)
			continue
		}
		if want, ok := triggerExit[name+"/"+cn]; ok && last.ExitCode != want {
			t.Errorf("%s/%s: last exit %d, want the trigger's %d", name, cn, last.ExitCode, want)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || !cs.Ready {
			t.Errorf("%s/%s: state %+v ready %v, want running and ready", name, cs.Name, cs.State, cs.Ready)
		}
	}
	found := false
	for _, c := range p.Status.Conditions {
		if c.Type == v1.AllContainersRestarting {
			found = true
			if c.Status != v1.ConditionFalse {
				t.Errorf("%s: AllContainersRestarting %+v, want False once all run again", name, c)
			}
		}
	}
	if !found {
		t.Errorf("%s: no AllContainersRestarting condition in %+v", name, p.Status.Conditions)
	}
}

// checkRuntimeInstances checks that the runtime holds, for each container
// of pod name, the instance of the status and at most one older one, and
// exactly one running instance of each running container.
func checkRuntimeInstances(t *testing.T, name string, p v1.Pod, cs []*runtimeapi.Container) {
	t.Helper()
	count, runningCount := map[string]int{}, map[string]int{}
	for _, c := range cs {
		count[c.GetMetadata().GetName()]++
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			runningCount[c.GetMetadata().GetName()]++
		}
	}
	for _, st := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if n := count[st.Name]; n < 1 || n > 2 {
			t.Errorf("%s/%s: %d instances in the runtime, want 1 or 2", name, st.Name, n)
		}
		if want := map[bool]int{true: 1}[st.State.Running != nil]; runningCount[st.Name] != want {
			t.Errorf("%s/%s: %d running instances, want %d", name, st.Name, runningCount[st.Name], want)
		}
	}
}

func statusNamed(list []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, c := range list {
		if c.Name == name {
			return c, true
		}
	}
	return v1.ContainerStatus{}, false
}
