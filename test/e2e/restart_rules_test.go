package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// restartRulesPod is a static pod manifest with one container "app"
// running script under /bin/sh, an emptyDir at /data for its marker
// files, and the container's restartPolicy and restartPolicyRules given
// as YAML lines (indented for the container).
func restartRulesPod(name, podPolicy, script, containerLines string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: %s
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: data, emptyDir: {}}
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", %q]
    volumeMounts:
    - {name: data, mountPath: /data}
%s`, name, podPolicy, images.TestboxImage, script, containerLines)
}

// Container-level restartPolicy and restartPolicyRules (kubelet's
// ContainerRestartRules, the upstream "Container Restart Rules" and Job
// "containers restarted by container restart policy should not trigger
// PodFailurePolicy" specs) on real containerd:
//   - rulematch: pod Never, container Never with a Restart rule on exit
//     42; it exits 42 once then 0: restarted once, Succeeded, never
//     Failed on the way;
//   - onfailure: pod Never, container OnFailure; it exits 1 once then 0:
//     the same (the Job spec's pod);
//   - always: pod Never, container Always; it exits 1: restarted, Running;
//   - mismatch: pod Always, container Never with a rule on 42; it exits 1:
//     Failed, not restarted.
//
// Rules with action RestartAllContainers: TestAgentRestartAllContainers.
func TestAgentRestartRules(t *testing.T) {
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared(t))
	once := func(code int) string {
		return fmt.Sprintf("if [ -e /data/ran ]; then exit 0; fi; touch /data/ran; exit %d", code)
	}
	rule := func(action string) string {
		return `    restartPolicy: Never
    restartPolicyRules:
    - action: ` + action + `
      exitCodes: {operator: In, values: [42]}
`
	}
	writeManifest(t, n.manifests, "rulematch.yaml", restartRulesPod("rulematch", "Never", once(42), rule("Restart")))
	writeManifest(t, n.manifests, "onfailure.yaml", restartRulesPod("onfailure", "Never", once(1), "    restartPolicy: OnFailure\n"))
	writeManifest(t, n.manifests, "always.yaml", restartRulesPod("always", "Never", "exit 1", "    restartPolicy: Always\n"))
	writeManifest(t, n.manifests, "mismatch.yaml", restartRulesPod("mismatch", "Always", "exit 1", rule("Restart")))
	start := time.Now()
	n.start(t)

	appStatus := func(p v1.Pod) v1.ContainerStatus {
		if len(p.Status.ContainerStatuses) == 1 {
			return p.Status.ContainerStatuses[0]
		}
		return v1.ContainerStatus{}
	}
	done := map[string]func(v1.Pod) bool{
		"rulematch": func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded },
		"onfailure": func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded },
		"always":    func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning && appStatus(p).RestartCount >= 1 },
		"mismatch":  func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed && appStatus(p).State.Terminated != nil },
	}
	final := map[string]v1.Pod{}
	phases := map[string][]v1.PodPhase{} // every phase seen, in order
	deadline := time.Now().Add(45 * time.Second)
	for len(final) < len(done) {
		if l, err := n.pods(t.Context()); err == nil {
			for _, p := range l.Items {
				name := strings.TrimSuffix(p.Name, "-"+n.node)
				if seen := phases[name]; len(seen) == 0 || seen[len(seen)-1] != p.Status.Phase {
					phases[name] = append(seen, p.Status.Phase)
				}
				if _, ok := final[name]; !ok && done[name] != nil && done[name](p) {
					final[name] = p
					t.Logf("%s done after %v: phases %v", name, time.Since(start).Round(time.Millisecond), phases[name])
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods not done after 45 s: done %d of %d, phases seen %v\n%s", len(final), len(done), phases, n.log(t))
		}
		time.Sleep(50 * time.Millisecond)
	}

	for _, name := range []string{"rulematch", "onfailure"} {
		p := final[name]
		cs := appStatus(p)
		last, cur := cs.LastTerminationState.Terminated, cs.State.Terminated
		want := int32(42)
		if name == "onfailure" {
			want = 1
		}
		if cs.RestartCount != 1 || last == nil || last.ExitCode != want || cur == nil || cur.ExitCode != 0 {
			t.Errorf("%s: restarts %d, last %+v, state %+v; want one restart after exit %d, then exit 0", name, cs.RestartCount, last, cur, want)
		}
		if slices.Contains(phases[name], v1.PodFailed) {
			t.Errorf("%s went through Failed: %v (a container its policy restarts keeps the pod Running)", name, phases[name])
		}
		if cs, _ := podObjects(t, rs, p.UID); len(cs) != 2 {
			t.Errorf("%s: %d containers in the runtime, want 2 (the exit %d and the success)", name, len(cs), want)
		}
	}
	if p := final["always"]; slices.Contains(phases["always"], v1.PodFailed) {
		t.Errorf("always: went through Failed: %v", phases["always"])
	} else if cs := appStatus(p); cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("always: last state %+v, want the exit 1", cs.LastTerminationState)
	}

	// The mismatch pod failed for good (its pod policy Always is
	// overridden): no restart count, and one container in the runtime, so
	// none was started after the exit (the first restart comes at once).
	mm := final["mismatch"]
	if cs := appStatus(mm); cs.RestartCount != 0 || cs.State.Terminated.ExitCode != 1 {
		t.Errorf("mismatch: restarts %d, state %+v; want no restart after exit 1", cs.RestartCount, cs.State)
	}
	if cs, _ := podObjects(t, rs, mm.UID); len(cs) != 1 {
		t.Errorf("mismatch: %d containers in the runtime, want 1", len(cs))
	}
}
