package cgroups

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestManagerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewManagerMetrics(reg)
	m.Observe("create", 20*time.Millisecond)
	m.Observe("create", 2*time.Second)
	m.Observe("destroy", time.Millisecond)
	want := `
# HELP kubelet_cgroup_manager_duration_seconds Duration in seconds for cgroup manager operations. Broken down by method.
# TYPE kubelet_cgroup_manager_duration_seconds histogram
`
	var b strings.Builder
	b.WriteString(want)
	for _, c := range []struct {
		op     string
		counts []int
		sum    string
	}{
		{"create", []int{0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2}, "2.02"},
		{"destroy", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "0.001"},
	} {
		for i, le := range []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
			b.WriteString("kubelet_cgroup_manager_duration_seconds_bucket{operation_type=\"" + c.op + "\",le=\"" + le + "\"} " + strconv.Itoa(c.counts[i]) + "\n")
		}
		b.WriteString("kubelet_cgroup_manager_duration_seconds_sum{operation_type=\"" + c.op + "\"} " + c.sum + "\n")
		b.WriteString("kubelet_cgroup_manager_duration_seconds_count{operation_type=\"" + c.op + "\"} " + strconv.Itoa(c.counts[11]) + "\n")
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String())); err != nil {
		t.Error(err)
	}
}
