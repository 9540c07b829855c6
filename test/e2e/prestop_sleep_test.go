package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// testFinalizer keeps a deleted pod in the API server after the node
// deleted it for good, as the upstream Lifecycle Sleep Hook specs do, so
// its final status can be read.
const testFinalizer = "kernelet.test/keep"

// sleepHookPod is an API pod whose container (testbox, args) has a preStop
// sleep of sleep seconds and the termination grace given, kept by
// testFinalizer once deleted.
func sleepHookPod(name string, sleep, grace int64, args ...string) *v1.Pod {
	pod := apiTestPod(name, grace, args...)
	pod.Finalizers = []string{testFinalizer}
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: sleep}}}
	return pod
}

// dropFinalizer removes testFinalizer from pod name at the end of the test
// (the namespace's cleanup deletes it).
func (c *clusterNode) dropFinalizer(t *testing.T, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := c.admin.CoreV1().Pods(c.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: drop the finalizer of pod %s: %v", name, err)
		}
	})
}

// deletePod deletes pod name with grace (nil: the pod's own) and returns
// the pod as the API server has it afterwards (its deletionTimestamp).
func (c *clusterNode) deletePod(t *testing.T, name string, grace *int64) *v1.Pod {
	t.Helper()
	if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
		t.Fatal(err)
	}
	p, err := c.getPod(t, name)
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp == nil {
		t.Fatalf("pod %s: no deletionTimestamp after the delete", name)
	}
	return p
}

// waitTerminated waits until the API status of pod name shows its
// container app terminated and returns the pod.
func (c *clusterNode) waitTerminated(t *testing.T, name string, timeout time.Duration) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, timeout, "container app of pod "+name+" terminated in the API status", func() (bool, error) {
		var err error
		if pod, err = c.getPod(t, name); err != nil {
			return false, err
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == "app" {
				return cs.State.Terminated != nil, fmt.Errorf("phase %s, state %+v", pod.Status.Phase, cs.State)
			}
		}
		return false, fmt.Errorf("phase %s, no status of container app", pod.Status.Phase)
	})
	return pod
}

// sleepDuration is the upstream specs' measure of how long the pod took to
// stop after its deletion: the container's finishedAt minus the
// deletionTimestamp (the deletion time plus grace), plus grace.
func sleepDuration(pod *v1.Pod, deletion metav1.Time, grace int64) time.Duration {
	finished := pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt
	return finished.Sub(deletion.Time) + time.Duration(grace)*time.Second
}

// The upstream [NodeConformance] "Lifecycle Sleep Hook" specs, with
// shorter times, and a second delete with a shorter grace while the pod
// terminates: pods kept by a finalizer are deleted while a preStop sleep
// hook is due, and their API status must show the container terminated —
// after the sleep when the grace allows it (sleep 4 s, grace 10 s: "valid
// prestop hook using sleep action"); at the deletion's grace when that is
// shorter than the sleep (sleep 8 s, pod grace 20 s, deleted with 4 s:
// "reduce GracePeriodSeconds during runtime"); soon after a second delete
// with a shorter grace, 2 s into a 20 s sleep of a 30 s grace (2 s: the
// API server counts it from the first delete, which is past, and makes it
// 1 s from now), or while the stop waits for a container that ignores
// SIGTERM for 60 s (3 s; the node counts a grace from when it hears of
// it, as kubelet). The final status is terminal
// (Succeeded for containers that exit on SIGTERM, Failed for the one
// killed), and the pod is deleted for good (grace 0) only after it.
func TestClusterPreStopSleep(t *testing.T) {
	type deletion struct{ first, second *int64 }
	cases := []struct {
		name string
		pod  *v1.Pod
		del  deletion
		// The stop after the last deletion, measured as the specs do, is
		// within [least, most]; least 0: the last deletion's grace.
		least, most time.Duration
		phase       v1.PodPhase
	}{
		{"sleep-within-grace", sleepHookPod("sleep-within-grace", 4, 10, "sleep"), deletion{}, 4 * time.Second, 10 * time.Second, v1.PodSucceeded},
		{"sleep-cut-by-delete", sleepHookPod("sleep-cut-by-delete", 8, 20, "sleep"), deletion{first: ptr.To[int64](4)}, 0, 8 * time.Second, v1.PodSucceeded},
		{"sleep-cut-by-redelete", sleepHookPod("sleep-cut-by-redelete", 20, 30, "sleep"), deletion{second: ptr.To[int64](2)}, 0, 5 * time.Second, v1.PodSucceeded},
		{"stop-cut-by-redelete", withoutHook(sleepHookPod("stop-cut-by-redelete", 0, 30, "trap-term", "--exit-after", "60s")),
			deletion{second: ptr.To[int64](3)}, 0, 8 * time.Second, v1.PodFailed},
	}
	c := newClusterNode(t)
	c.start(t)
	for _, tc := range cases {
		c.dropFinalizer(t, tc.name)
		c.createPod(t, tc.pod)
	}
	for _, tc := range cases {
		c.waitPhase(t, tc.name, v1.PodRunning, 60*time.Second)
	}
	last := map[string]*v1.Pod{}
	for _, tc := range cases {
		last[tc.name] = c.deletePod(t, tc.name, tc.del.first)
	}
	time.Sleep(2 * time.Second) // the sleeps and the stop are under way
	for _, tc := range cases {
		if tc.del.second != nil {
			last[tc.name] = c.deletePod(t, tc.name, tc.del.second)
		}
	}
	for _, tc := range cases {
		pod := c.waitTerminated(t, tc.name, 25*time.Second)
		deleted := last[tc.name]
		g := *deleted.DeletionGracePeriodSeconds
		d := sleepDuration(pod, *deleted.DeletionTimestamp, g)
		t.Logf("pod %s: stopped %v after its last deletion (grace %ds); phase %s", tc.name, d, g, pod.Status.Phase)
		least := tc.least
		if least == 0 {
			least = time.Duration(g) * time.Second
		}
		if d < least || d > tc.most {
			t.Errorf("pod %s stopped %v after its last deletion, want within [%v, %v] (finishedAt %v, deletionTimestamp %v)",
				tc.name, d, least, tc.most, pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt, deleted.DeletionTimestamp)
		}
		if pod.Status.Phase != tc.phase {
			t.Errorf("pod %s: phase %s after its termination, want %s", tc.name, pod.Status.Phase, tc.phase)
		}
		// The final deletion (grace 0) comes after the final status.
		waitFor(t, 10*time.Second, "pod "+tc.name+" deleted for good", func() (bool, error) {
			p, err := c.getPod(t, tc.name)
			if err != nil {
				return false, err
			}
			g := p.DeletionGracePeriodSeconds
			return g != nil && *g == 0, fmt.Errorf("deletionGracePeriodSeconds %v", g)
		})
	}
}

func withoutHook(pod *v1.Pod) *v1.Pod {
	pod.Spec.Containers[0].Lifecycle = nil
	return pod
}
