package bench

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// The eviction benchmark's table: one line per agent and workload, with
// the ratio of each baseline (the real kubelet, kernelet's kubelet mode)
// to kernelet on the same workload.

// evictionTable renders rows as the benchmark prints them.
func evictionTable(rows []evictionRow) string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "agent\tworkload\truns\tevicted before OOM\tstatus Evicted\tstops seen (early)\tp50\tp99\tp50 ratio vs kernelet\tp99 ratio vs kernelet")
	base := map[evictionWorkload]evictionRow{}
	for _, r := range rows {
		if r.agent == agentKernelet {
			base[r.workload] = r
		}
	}
	for _, r := range rows {
		lat := r.latencies()
		p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
		r50, r99 := "-", "-"
		if k, ok := base[r.workload]; ok && r.agent != agentKernelet {
			kl := k.latencies()
			r50, r99 = ratio(p50, percentile(kl, 0.5)), ratio(p99, percentile(kl, 0.99))
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d/%d\t%d/%d\t%d (%d)\t%s\t%s\t%s\t%s\n", r.agent, r.workload, len(r.runs),
			r.evictedBeforeOOM(), len(r.runs), r.statusEvicted(), len(r.runs), len(lat), r.early(), msOrDash(p50, len(lat)), msOrDash(p99, len(lat)), r50, r99)
	}
	_ = tw.Flush()
	return sb.String()
}

// ratio is a/b as "12.3×", "-" when a is missing; a b under the poll
// interval (the crossing's resolution) counts as one interval, which
// makes the ratio a lower bound ("≥12.3×").
func ratio(a, b time.Duration) string {
	if a <= 0 {
		return "-"
	}
	bound := ""
	if b < evictionPoll {
		b, bound = evictionPoll, "≥"
	}
	return fmt.Sprintf("%s%.1f×", bound, float64(a)/float64(b))
}

func msOrDash(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", ms(d))
}

// reportEviction logs the table and reports kernelet's and the baselines'
// figures as benchmark metrics.
func reportEviction(b *testing.B, rows []evictionRow) {
	b.Helper()
	if len(rows) == 0 {
		b.Fatal("no runs")
	}
	b.Logf("eviction: threshold crossed (kubepods working set ≥ limit − 64Mi, polled every %v) → first StopContainer/StopPodSandbox of the pod at the CRI proxy (before any OOM); evicted before OOM: that stop and no OOM in kubepods until the pod is gone; status Evicted: the pod ended Failed/Evicted; early: stops before the poll saw the crossing, counted as 0\n%s",
		evictionPoll, evictionTable(rows))
	for _, r := range rows {
		lat := r.latencies()
		unit := fmt.Sprintf("%s_%s%d", strings.ReplaceAll(r.agent, "-", "_"), r.workload.kind, r.workload.rate)
		if len(lat) > 0 {
			b.ReportMetric(ms(percentile(lat, 0.5)), unit+"_p50_ms")
			b.ReportMetric(ms(percentile(lat, 0.99)), unit+"_p99_ms")
		}
		b.ReportMetric(float64(r.evictedBeforeOOM()), unit+"_evicted_before_oom")
	}
}

func TestEvictionTable(t *testing.T) {
	hold := evictionWorkload{kind: "hold", mib: 480, rate: 50}
	grow := evictionWorkload{kind: "grow", mib: 700, rate: 200}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rows := []evictionRow{
		{agent: agentKernelet, workload: hold, runs: []evictionRun{{evicted: true, stopped: true, latency: ms(10)}, {evicted: true, stopped: true, latency: ms(30)}}},
		{agent: agentKernelet, workload: grow, runs: []evictionRun{{evicted: true, stopped: true, latency: ms(20)}, {evicted: true, oom: true, stopped: true, latency: ms(-1)}}},
		{agent: agentKubelet, workload: hold, runs: []evictionRun{{evicted: true, stopped: true, latency: ms(4000)}, {evicted: true, stopped: true, latency: ms(9000)}}},
		{agent: agentKubelet, workload: grow, runs: []evictionRun{{oom: true}, {oom: true, stopped: true, latency: ms(3000)}}},
	}
	got := evictionTable(rows)
	t.Log("\n" + got)
	for _, want := range []string{
		"kernelet  hold 480 MiB @ 50 MiB/s   2     2/2                 2/2             2 (0)               10.0 ms    30.0 ms",
		"kernelet  grow 700 MiB @ 200 MiB/s  2     1/2                 2/2             2 (1)               0.0 ms     20.0 ms",
		"kubelet   hold 480 MiB @ 50 MiB/s   2     2/2                 2/2             2 (0)               4000.0 ms  9000.0 ms  400.0×                 300.0×",
		"kubelet   grow 700 MiB @ 200 MiB/s  2     0/2                 0/2             1 (0)               3000.0 ms  3000.0 ms  ≥1500.0×               150.0×",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if p := percentile([]time.Duration{ms(3), ms(1), ms(2)}, 0.99); p != ms(3) {
		t.Errorf("p99 of 3 values: %v", p)
	}
}
