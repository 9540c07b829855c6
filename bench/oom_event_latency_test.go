package bench

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// BenchmarkOOMEventLatency measures the OOM kill stream as `kernelet run`
// opens it (kevents.Env.OpenOOM with kmsg and a 50 ms merge window, the
// same call the agent makes)
// from the kill to the moment the merged, attributable kill reaches the
// agent's handler (which records the OOMKilling event and counts it):
// with eBPF (mark_victim + kmsg), and with eBPF forced off (`--bpf=off`:
// oom_control + kmsg here, memory.events + kmsg on cgroup v2), over the
// same kind of kills in the same run. The kill's time is the kernel time
// of an independent eBPF mark_victim tracer, open in both phases (a
// measurement reference only; the stream under test does not use it).
// Prints p50/p99 per mode and the ratio fallback/eBPF.
func BenchmarkOOMEventLatency(b *testing.B) {
	env.RequireRoot(b)
	h, err := cgroups.Discover()
	if err != nil {
		b.Fatal(err)
	}
	memory, unified := h.V1["memory"], h.Unified
	env.Require(b, memory != nil && unified != nil, "a hybrid cgroup host (v1 memory hierarchy, cgroup2 mount)")
	box, err := images.TestboxBinary()
	if err != nil {
		b.Fatal(err)
	}
	name, memDir, uniDir := newOOMCgroup(b, memory, unified)
	ref, err := bpf.OpenOOMTracer(b.Context(), bpf.Options{})
	env.Require(b, err == nil, fmt.Sprintf("the eBPF OOM tracer as the kill time reference (%v)", err))
	defer ref.Close()
	var (
		mu     sync.Mutex
		killAt = map[int]time.Time{} // pid → kernel time of the kill
		seen   = map[int]time.Time{} // pid → when the stream emitted it
		first  = map[int]time.Time{} // pid → when its first report reached Go
	)
	raw := func(k oom.Kill, arrived time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := first[k.Pid]; !ok && k.Known.Has(oom.FieldPid) {
			first[k.Pid] = arrived
		}
	}
	go func() {
		for ev := range ref.Events() {
			mu.Lock()
			killAt[ev.Pid] = ev.Time
			mu.Unlock()
		}
	}()

	kills := max(b.N, minOOMKills)
	lat := map[string][]time.Duration{}
	arrival := map[string][]time.Duration{} // kill → its first report reached Go
	via := map[string]string{}
	b.ResetTimer()
	for _, mode := range []string{"ebpf", "bpf-off"} {
		ev, err := kevents.Open(b.Context(), kevents.Options{BPFOff: mode == "bpf-off"})
		if err != nil {
			b.Fatal(err)
		}
		s, err := ev.OpenOOM(b.Context(), kevents.OOMOptions{WithKmsg: true, Window: 50 * time.Millisecond, OOMControlCgroups: []string{name}, Raw: raw})
		if err != nil {
			b.Fatal(err)
		}
		via[mode] = s.Via()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for k := range s.Kills() {
				now := time.Now()
				mu.Lock()
				if _, ok := seen[k.Pid]; !ok && k.Known.Has(oom.FieldPid) {
					seen[k.Pid] = now
				}
				mu.Unlock()
			}
		}()
		for range kills {
			cmd := startOOMVictim(b, box, memDir, uniDir)
			pid := cmd.Process.Pid
			_ = cmd.Wait()
			deadline := time.Now().Add(3 * time.Second)
			for {
				mu.Lock()
				k, okK := killAt[pid]
				e, okE := seen[pid]
				mu.Unlock()
				if okK && okE {
					lat[mode] = append(lat[mode], e.Sub(k))
					mu.Lock()
					if f, ok := first[pid]; ok {
						arrival[mode] = append(arrival[mode], f.Sub(k))
					}
					mu.Unlock()
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%s: pid %d: kill seen by the reference %v, by the stream %v (%s)", mode, pid, okK, okE, s.Via())
				}
				time.Sleep(time.Millisecond)
			}
		}
		_ = s.Close()
		<-done
		_ = ev.Close()
	}
	b.StopTimer()
	var lines []string
	base := percentile(lat["ebpf"], 0.5)
	base99 := percentile(lat["ebpf"], 0.99)
	for _, mode := range []string{"ebpf", "bpf-off"} {
		p50, p99 := percentile(lat[mode], 0.5), percentile(lat[mode], 0.99)
		lines = append(lines, fmt.Sprintf("%-8s via %-26s n=%-3d p50 %-12v p99 %-12v p50/ebpf %.2f  p99/ebpf %.2f  (first report reached Go: p50 %v p99 %v)",
			mode, via[mode], len(lat[mode]), p50.Round(time.Microsecond), p99.Round(time.Microsecond),
			float64(p50)/float64(base), float64(p99)/float64(base99),
			percentile(arrival[mode], 0.5).Round(time.Microsecond), percentile(arrival[mode], 0.99).Round(time.Microsecond)))
		b.ReportMetric(float64(p50.Microseconds()), mode+"-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), mode+"-p99-µs")
	}
	b.Logf("OOM kill → kill handed to the agent's event recorder (kevents.OpenOOM with kmsg), %d kills per mode:\n%s\n%s",
		kills, strings.Join(lines, "\n"), consoleNote())
}
