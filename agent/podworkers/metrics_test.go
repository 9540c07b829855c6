package podworkers

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodMetrics(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, func() time.Time { return now })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	m.synced(pod, now, v1.PodPending) // create
	now = now.Add(3 * time.Second)
	m.synced(pod, now.Add(-time.Second), v1.PodRunning) // started 3 s after first seen
	m.synced(pod, now, v1.PodRunning)
	m.Forget(pod.UID)
	want := `
# HELP kubelet_pod_start_duration_seconds Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run
# TYPE kubelet_pod_start_duration_seconds histogram
kubelet_pod_start_duration_seconds_bucket{le="0.5"} 0
kubelet_pod_start_duration_seconds_bucket{le="1"} 0
kubelet_pod_start_duration_seconds_bucket{le="2"} 0
kubelet_pod_start_duration_seconds_bucket{le="3"} 1
`
	got := testutil.CollectAndCount(m.worker, "kubelet_pod_worker_duration_seconds")
	if got != 2 {
		t.Errorf("worker series = %d, want create and sync", got)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want+tail()), "kubelet_pod_start_duration_seconds"); err != nil {
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

func TestPodStartSLI(t *testing.T) {
	created := time.Unix(1000, 0)
	now := created.Add(2 * time.Second)
	m := NewMetrics(nil, func() time.Time { return now })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", CreationTimestamp: metav1.NewTime(created)}}
	m.synced(pod, now, v1.PodPending) // first seen 2 s after creation
	// Two overlapping pulls: 3 s to 10 s and 4 s to 12 s after creation:
	// 9 s of pulling.
	m.ImagePulled(pod.UID, created.Add(4*time.Second), created.Add(12*time.Second))
	m.ImagePulled(pod.UID, created.Add(3*time.Second), created.Add(10*time.Second))
	now = created.Add(15 * time.Second)
	m.synced(pod, now, v1.PodRunning)
	m.ImagePulled(pod.UID, now, now.Add(time.Hour))                             // running: ignored
	if got, want := histogram(t, m.startSLI).GetSampleSum(), 6.0; got != want { // 15 s - 9 s of pulls
		t.Errorf("SLI = %v s, want %v s", got, want)
	}
	if got, want := histogram(t, m.start).GetSampleSum(), 13.0; got != want { // first seen at 2 s
		t.Errorf("start = %v s, want %v s", got, want)
	}
	if len(m.pulls) != 0 || len(m.firstAt) != 0 {
		t.Errorf("state left of a started pod: pulls %v, firstAt %v", m.pulls, m.firstAt)
	}
	noCreation := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}
	m.synced(noCreation, now, v1.PodRunning)
	if got := histogram(t, m.startSLI).GetSampleCount(); got != 1 {
		t.Errorf("SLI samples = %d, want 1 (none without a creation timestamp)", got)
	}
}

// histogram is h's one sample set.
func histogram(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
