package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/runtime"
)

func TestPrintPods(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-90 * time.Second))
	pod := func(name, ip, ann string, restarts int32) v1.Pod {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, StartTime: &started,
				ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, RestartCount: restarts}}}}
		if ann != "" {
			p.Annotations = map[string]string{runtime.AnnotationOOMScoreAdj: ann}
		}
		return p
	}
	var b bytes.Buffer
	printPods(&b, []v1.Pod{
		pod("guaranteed", "192.0.2.2", `{"app":{"containerID":"c1","requested":-997,"runtime":0,"effective":0,"refusedBy":"runtime"}}`, 0),
		pod("web", "10.244.7.2", `{"app":{"containerID":"c2","requested":999,"effective":999},"side":{"containerID":"c3","requested":999,"effective":999}}`, 2),
		pod("pending", "", "", 0),
		pod("odd", "", "{", 0),
	}, now)
	out := b.String()
	for _, want := range []string{
		"Pods:        4",
		"NAMESPACE/NAME      PHASE    READY  RESTARTS  AGE    IP          OOM_SCORE_ADJ",
		"default/guaranteed  Running  1/1    0         1m30s  192.0.2.2   0 (asked -997)",
		"default/web         Running  1/1    2         1m30s  10.244.7.2  app=999, side=999",
		"default/pending     Running  1/1    0         1m30s  -           -",
		"default/odd         Running  1/1    0         1m30s  -           ?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pods table lacks %q:\n%s", want, out)
		}
	}
}

// An OOM-killed container and a pod rejected at admission show under
// "Pod problems" with their reasons (issue 15 #8).
func TestPrintPodProblems(t *testing.T) {
	finished := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	oom := &v1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: finished}
	pods := []v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hog"},
			Status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "eat", State: v1.ContainerState{Terminated: oom}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "looper"},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "eat",
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}},
				LastTerminationState: v1.ContainerState{Terminated: oom}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rejected"},
			Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "UnexpectedAdmissionError", Message: "clusterTrustBundle projections are not supported"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fine"},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}},
	}
	var b bytes.Buffer
	printPodProblems(&b, pods)
	out := b.String()
	for _, want := range []string{
		"Pod problems:\n",
		"  default/hog: Failed\n",
		"  default/hog container eat: OOMKilled (exit 137, at 2026-11-22T12:00:00Z)\n",
		"  default/looper container eat: waiting: CrashLoopBackOff: back-off 10s restarting failed container; last run OOMKilled (exit 137, at 2026-11-22T12:00:00Z)\n",
		"  default/rejected: Failed: UnexpectedAdmissionError: clusterTrustBundle projections are not supported\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("problems lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fine") {
		t.Errorf("a healthy pod is listed as a problem:\n%s", out)
	}
	b.Reset()
	printPodProblems(&b, pods[3:])
	if b.Len() != 0 {
		t.Errorf("no problems must print nothing, got %q", b.String())
	}
}

// failureReasons asks each failed check for its reason; one that passes by
// then is said to pass again, not to have failed with "ok".
func TestFailureReasons(t *testing.T) {
	get := func(_ context.Context, url string) (int, string, error) {
		switch {
		case strings.HasSuffix(url, "/healthz/runtime"):
			return 500, "internal server error: runtime not ready\n", nil
		case strings.HasSuffix(url, "/healthz/pleg"):
			return 200, "ok", nil
		}
		return 404, "", nil
	}
	in := "[+]ping ok\n[-]runtime failed: reason withheld\n[-]pleg failed: reason withheld\nhealthz check failed\n"
	got := failureReasons(context.Background(), get, "http://x", in)
	want := "[+]ping ok\n[-]runtime failed: runtime not ready\n[-]pleg failed (passes again now)\nhealthz check failed\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
