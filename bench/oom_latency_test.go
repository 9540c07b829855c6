package bench

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/oom"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/images"
)

// minOOMKills is the least number of kills one run measures (so that
// -benchtime=1x still gives percentiles).
const minOOMKills = 5

// BenchmarkOOMLatency measures how long after the kernel marks an OOM
// victim each source tells Go about it: the eBPF ring buffer event, the v1
// memory.oom_control eventfd, the /dev/kmsg "Killed process" record, and a
// 1 s poll of the memcg's oom_kill counter (the baseline). The kill's time
// is the eBPF event's kernel timestamp; every source is open during the
// same kills. Prints p50/p99 per source and their ratio to polling.
func BenchmarkOOMLatency(b *testing.B) {
	env.RequireRoot(b)
	h, err := cgroups.Discover()
	if err != nil {
		b.Fatal(err)
	}
	memory, unified := h.V1["memory"], h.Unified
	env.Require(b, memory != nil && unified != nil, "a hybrid cgroup host (v1 memory hierarchy for oom_control, cgroup2 mount)")
	box, err := images.TestboxBinary()
	if err != nil {
		b.Fatal(err)
	}
	name, memDir, uniDir := newOOMCgroup(b, memory, unified)

	var (
		mu      sync.Mutex
		cur     int                      // pid of the current victim
		arrived = map[string]time.Time{} // source → arrival, for cur
		killAt  time.Time                // eBPF event's kernel time, for cur
	)
	raw := func(k oom.Kill, now time.Time) {
		mu.Lock()
		defer mu.Unlock()
		var src string
		switch {
		case k.Sources&oom.SourceBPF != 0 && k.Pid == cur:
			src, killAt = "ebpf", k.Time
		case k.Sources&oom.SourceKmsg != 0 && k.Pid == cur && k.Known.Has(oom.FieldRSS):
			src = "kmsg"
		case k.Sources&oom.SourceOOMControl != 0 && cur != 0:
			src = "oom_control"
		default:
			return
		}
		if _, ok := arrived[src]; !ok {
			arrived[src] = now
		}
	}
	s, err := oom.OpenStream(b.Context(), oom.StreamConfig{
		Sources:           oom.SourceBPF | oom.SourceOOMControl | oom.SourceKmsg,
		OOMControlCgroups: []string{name},
		Hierarchies:       h,
		Raw:               raw,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if want := oom.SourceBPF | oom.SourceOOMControl | oom.SourceKmsg; s.Active() != want {
		b.Fatalf("sources %v, want %v (%v)", s.Active(), want, s.Notes())
	}
	go func() { // drain the merged stream
		for range s.Kills() {
		}
	}()

	// The baseline: poll oom_kill every second, on its own phase.
	var killTimes []time.Time // eBPF time of each kill, in order
	var polled []time.Duration
	pollStop := make(chan struct{})
	pollDone := make(chan struct{})
	base := readOOMKill(b, memDir)
	go func() {
		defer close(pollDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		seen := 0
		for {
			select {
			case <-pollStop:
				return
			case <-tick.C:
			}
			n := int(readOOMKillNoFail(memDir) - base)
			now := time.Now()
			mu.Lock()
			for seen < n && seen < len(killTimes) {
				polled = append(polled, now.Sub(killTimes[seen]))
				seen++
			}
			mu.Unlock()
		}
	}()

	kills := max(b.N, minOOMKills)
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for range kills {
		cmd := startOOMVictim(b, box, memDir, uniDir)
		mu.Lock()
		cur, arrived, killAt = cmd.Process.Pid, map[string]time.Time{}, time.Time{}
		mu.Unlock()
		_ = cmd.Wait()
		deadline := time.Now().Add(3 * time.Second)
		for {
			mu.Lock()
			complete := len(arrived) == 3 && !killAt.IsZero()
			mu.Unlock()
			if complete || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		if killAt.IsZero() {
			mu.Unlock()
			b.Fatalf("no eBPF event for pid %d", cur)
		}
		for src, t := range arrived {
			lat[src] = append(lat[src], t.Sub(killAt))
		}
		killTimes = append(killTimes, killAt)
		cur = 0
		mu.Unlock()
	}
	// Let the poller see the last kills.
	deadline := time.Now().Add(2500 * time.Millisecond)
	for {
		mu.Lock()
		done := len(polled) >= len(killTimes)
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(pollStop)
	<-pollDone
	b.StopTimer()
	mu.Lock()
	lat["poll_1s"] = polled
	mu.Unlock()

	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		d = slices.Clone(d)
		slices.Sort(d)
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	poll50, poll99 := pct(lat["poll_1s"], 0.5), pct(lat["poll_1s"], 0.99)
	var lines []string
	for _, src := range []string{"ebpf", "oom_control", "kmsg", "poll_1s"} {
		d := lat[src]
		p50, p99 := pct(d, 0.5), pct(d, 0.99)
		ratio := func(a, base time.Duration) string {
			if base == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.5f", float64(a)/float64(base))
		}
		if p50 < 0 {
			// oom_control's eventfd fires when the memcg hits OOM, before the
			// kill is recorded: it is earlier but names no victim.
			rel := func(d time.Duration) string {
				if d < 0 {
					return fmt.Sprintf("%v before", -d)
				}
				return fmt.Sprintf("%v after", d)
			}
			lines = append(lines, fmt.Sprintf("%-12s n=%-3d fires %s the kill at p50, %s at p99 (no victim identity)", src, len(d), rel(p50), rel(p99)))
			b.ReportMetric(float64(p50.Microseconds()), src+"-p50-µs")
			continue
		}
		lines = append(lines, fmt.Sprintf("%-12s n=%-3d p50 %-12v p99 %-12v  p50/poll %s  p99/poll %s", src, len(d), p50, p99, ratio(p50, poll50), ratio(p99, poll99)))
		b.ReportMetric(float64(p50.Microseconds()), src+"-p50-µs")
	}
	b.Logf("OOM notification latency after the kill (eBPF kernel time), %d kills:\n%s\n%s", kills, strings.Join(lines, "\n"), consoleNote())
	if len(lat["ebpf"]) == 0 || len(lat["poll_1s"]) == 0 {
		b.Errorf("missing measurements: %v", lines)
	}
}

func readOOMKill(b *testing.B, dir string) uint64 {
	b.Helper()
	v, err := readOOMKillErr(dir)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func readOOMKillNoFail(dir string) uint64 {
	v, _ := readOOMKillErr(dir)
	return v
}

func readOOMKillErr(dir string) (uint64, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			return strconv.ParseUint(v, 10, 64)
		}
	}
	return 0, errors.New("memory.oom_control: no oom_kill line (kernel < 4.13)")
}

// consoleNote says whether the kernel prints the OOM kill line ("Killed
// process", KERN_ERR) to a serial console: it does so synchronously after
// marking the victim and before the ring buffer's wakeup reaches user
// space, which adds milliseconds to every source here. (Measured on this
// kind of host: eBPF p50 2.9 ms with console_loglevel 4 and console=ttyS0,
// 0.29 ms with console_loglevel 1.)
func consoleNote() string {
	cmdline, _ := os.ReadFile("/proc/cmdline")
	printk, _ := os.ReadFile("/proc/sys/kernel/printk")
	level := -1
	if f := strings.Fields(string(printk)); len(f) > 0 {
		level, _ = strconv.Atoi(f[0])
	}
	serial := ""
	for _, arg := range strings.Fields(string(cmdline)) {
		if c, ok := strings.CutPrefix(arg, "console="); ok && strings.HasPrefix(c, "ttyS") {
			serial = c
		}
	}
	const kernErr = 3
	if serial != "" && level > kernErr {
		return fmt.Sprintf("note: console_loglevel %d with serial console %s: the kernel writes each OOM kill line to the serial port before user space is woken; these latencies include it", level, serial)
	}
	return fmt.Sprintf("console_loglevel %d, serial console %q: the OOM kill line does not go to a serial port", level, serial)
}

// newOOMCgroup makes a test-owned cgroup limited to 32 MiB in the v1
// memory hierarchy (limit set before any process joins) and the same
// name in the cgroup2 hierarchy; both are removed at cleanup.
func newOOMCgroup(b *testing.B, memory, unified *cgroups.Mount) (name, memDir, uniDir string) {
	b.Helper()
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		b.Fatal(err)
	}
	name = "/" + env.RunID() + "-oomlat-" + hex.EncodeToString(rnd[:])
	memDir, _ = memory.Dir(name)
	uniDir, _ = unified.Dir(name)
	for _, dir := range []string{memDir, uniDir} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := cgroupfs.KillAndRemoveDir(dir); err != nil {
				b.Errorf("remove %s: %v", dir, err)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(memDir, "memory.limit_in_bytes"), []byte(strconv.Itoa(32<<20)), 0o644); err != nil {
		b.Fatal(err)
	}
	return name, memDir, uniDir
}

// startOOMVictim starts testbox allocating 200 MiB inside memDir and
// uniDir: the kernel OOM-kills it.
func startOOMVictim(b *testing.B, box, memDir, uniDir string) *exec.Cmd {
	b.Helper()
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", memDir, uniDir, box, "alloc", "--mib", "200")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd
}
