package main

import (
	"bytes"
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
