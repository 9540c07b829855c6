package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/eviction"
)

var metaGet = metav1.GetOptions{}

func contextWithCancel(b *testing.B) (context.Context, context.CancelFunc) {
	return context.WithCancel(b.Context())
}

// endedOnItsOwn says how a workload pod ended by itself rather than by
// an agent or the kernel: no container of it was stopped by the agent
// (containerStopped false: agents stop running containers only, so a pod
// that ended first sees only its sandbox stopped), it was not evicted,
// and a container of it exited with a code of its own (not 137 or 143,
// the SIGKILL and SIGTERM an eviction or a kill ends it with, nor an OOM
// kill) — a writer whose tmpfs is full (a memory-backed emptyDir is sized
// to the node's allocatable memory), say. The CRI stop of such a pod's
// sandbox that follows is the agent cleaning up a terminated pod, not an
// action against pressure. The stop check is what tells apart a testbox
// that exits 0 on the SIGTERM of an eviction: the real kubelet's pods
// evicted that way were seen without the Evicted reason (host, 2026-12-01).
func endedOnItsOwn(p *v1.Pod, containerStopped bool) (string, bool) {
	if containerStopped || p.Status.Reason == eviction.Reason {
		return "", false
	}
	for _, c := range p.Status.ContainerStatuses {
		t := c.State.Terminated
		if t == nil || t.ExitCode == 137 || t.ExitCode == 143 || t.Reason == "OOMKilled" {
			continue
		}
		return fmt.Sprintf("container %s exited %d (%s) at %s", c.Name, t.ExitCode, t.Reason,
			t.FinishedAt.UTC().Format("15:04:05")), true
	}
	return "", false
}

// pressureTable renders the cells: one line per agent and workload.
// "Neither" counts the quiet runs (no workload pod stopped, no kernel OOM
// kill, no throttled pod relaxed for a stall): for a throttling agent the
// runs it held.
func pressureTable(cells []pressureCell) string {
	baselineOOM := map[string]int{}
	baseline := map[string]bool{}
	for _, c := range cells {
		if c.agent == agentNone {
			baseline[c.workload] = true
			baselineOOM[c.workload] += c.count(func(r pressureRun) bool { return r.oom })
		}
	}
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tagent\truns\tevicted before any OOM kill\tkernel OOM kill\tneedless evictions\tneither stop nor OOM kill\tcrossing → first stop p50\tbystander damage")
	for _, c := range cells {
		n := len(c.runs)
		needless := "n/a"
		if baseline[c.workload] {
			k := 0
			if baselineOOM[c.workload] == 0 {
				k = c.count(func(r pressureRun) bool { return r.stops > 0 })
			}
			needless = fmt.Sprintf("%d/%d", k, n)
		}
		var lat []time.Duration
		for _, r := range c.runs {
			if r.stops > 0 && r.crossed {
				lat = append(lat, max(r.latency, 0))
			}
		}
		runs := strconv.Itoa(n)
		if len(c.aborted) > 0 {
			runs += fmt.Sprintf(" (+%d aborted)", len(c.aborted))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d/%d\t%s\t%d/%d\t%s\t%d/%d\n", c.workload, c.agent, runs,
			c.count(func(r pressureRun) bool { return r.stops > 0 && !r.oom }), n,
			c.count(func(r pressureRun) bool { return r.oom }), n, needless,
			c.count(pressureRun.quiet), n, msOrDash(percentile(lat, 0.5), len(lat)),
			c.count(func(r pressureRun) bool { return r.bystander }), n)
	}
	_ = tw.Flush()
	return sb.String()
}

func TestPressureTable(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cells := []pressureCell{
		{agent: agentNone, workload: "pc-reread", runs: []pressureRun{{crossed: true}, {crossed: true}}},
		{agent: agentKubelet, workload: "pc-reread", runs: []pressureRun{{stops: 1, crossed: true, latency: ms(4000)}, {crossed: true}}},
		{agent: agentNone, workload: "anon500", runs: []pressureRun{{oom: true, crossed: true}}},
		{agent: agentKernelet, workload: "anon500", runs: []pressureRun{{stops: 1, crossed: true, latency: ms(-1)}}},
		{agent: agentKerneletPageCache, workload: "five40", runs: []pressureRun{{stops: 2, oom: true, bystander: true}}},
		{agent: agentKubelet, workload: "five40", runs: []pressureRun{{stops: 1, crossed: true, latency: ms(2000)}},
			aborted: []string{"pod five40-1 Pending past 5m0s"}},
		{agent: agentKerneletOptions, workload: "leak2", runs: []pressureRun{{crossed: true}, {crossed: true, relaxed: 1}, {stops: 1, crossed: true, latency: ms(30)}}},
	}
	got := pressureTable(cells)
	t.Log("\n" + got)
	flat := strings.Join(strings.Fields(got), " ") // the tabwriter's widths aside
	for _, want := range []string{
		"pc-reread kubelet 2 1/2 0/2 1/2 1/2 4000.0 ms 0/2",
		"anon500 none 1 0/1 1/1 0/1 0/1 - 0/1",
		"anon500 kernelet 1 1/1 0/1 0/1 0/1 0.0 ms 0/1",
		"five40 kernelet-pagecache 1 0/1 1/1 n/a 0/1 - 1/1",
		"five40 kubelet 1 (+1 aborted) 1/1 0/1 n/a 0/1 2000.0 ms 0/1",
		"leak2 kernelet-options 3 1/3 0/3 n/a 1/3 30.0 ms 0/3",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestEndedOnItsOwn(t *testing.T) {
	ended := func(code int32, reason string) *v1.Pod {
		return &v1.Pod{Status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{
			{Name: "c", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}}}
	}
	evicted := ended(1, "Error")
	evicted.Status.Reason = "Evicted"
	running := &v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
		{Name: "c", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		stopped bool
		want    bool
	}{
		{"its own error", ended(1, "Error"), false, true},
		{"completed", ended(0, "Completed"), false, true},
		{"exited 0 on the agent's SIGTERM", ended(0, "Completed"), true, false},
		{"SIGTERM of a stop", ended(143, "Error"), false, false},
		{"SIGKILL of a stop or systemd-oomd", ended(137, "Error"), false, false},
		{"kernel OOM kill", ended(137, "OOMKilled"), false, false},
		{"evicted", evicted, false, false},
		{"running", running, false, false},
	} {
		how, got := endedOnItsOwn(tc.pod, tc.stopped)
		if got != tc.want {
			t.Errorf("%s: endedOnItsOwn = %v (%q), want %v", tc.name, got, how, tc.want)
		}
	}
	if how, _ := endedOnItsOwn(ended(1, "Error"), false); !strings.Contains(how, "container c exited 1 (Error)") {
		t.Errorf("description %q", how)
	}
}
