package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodMetrics(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newPodMetrics(func() time.Time { return now })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	m.synced(pod, now, v1.PodPending) // create
	now = now.Add(3 * time.Second)
	m.synced(pod, now.Add(-time.Second), v1.PodRunning) // started 3 s after first seen
	m.synced(pod, now, v1.PodRunning)
	m.forget(pod.UID)
	want := `
# HELP kubelet_pod_start_duration_seconds Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run
# TYPE kubelet_pod_start_duration_seconds histogram
kubelet_pod_start_duration_seconds_bucket{le="0.5"} 0
kubelet_pod_start_duration_seconds_bucket{le="1"} 0
kubelet_pod_start_duration_seconds_bucket{le="2"} 0
kubelet_pod_start_duration_seconds_bucket{le="3"} 1
`
	got := testutil.CollectAndCount(m, "kubelet_pod_worker_duration_seconds")
	if got != 2 {
		t.Errorf("worker series = %d, want create and sync", got)
	}
	if err := testutil.CollectAndCompare(m, strings.NewReader(want+tail()), "kubelet_pod_start_duration_seconds"); err != nil {
		t.Error(err)
	}
}

// tail is the rest of the one-sample histogram of TestPodMetrics.
func tail() string {
	var b strings.Builder
	for _, le := range []string{"4", "5", "6", "8", "10", "20", "30", "45", "60", "120", "180", "240", "300", "360", "480", "600",
		"900", "1200", "1800", "2700", "3600", "+Inf"} {
		b.WriteString(`kubelet_pod_start_duration_seconds_bucket{le="` + le + `"} 1` + "\n")
	}
	b.WriteString("kubelet_pod_start_duration_seconds_sum 3\nkubelet_pod_start_duration_seconds_count 1\n")
	return b.String()
}
