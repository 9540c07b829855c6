package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
)

// sweepCgroups is how many cgroups one sweep reads.
const sweepCgroups = 1000

// sweepTree is the benchmark's cgroups: a parent "/<run id>-sweep-<random>"
// with sweepCgroups children, in every hierarchy the sweep reads.
type sweepTree struct {
	parent string
	paths  []string // the children, as cgroup paths
	dirs   []string // every directory created, in creation order
}

// newSweepTree creates the tree: on hybrid and v1 hosts in the v1 memory,
// cpu, cpuacct and pids hierarchies plus the unified tree (PSI); on v2
// hosts in the unified tree with those controllers enabled. The memory
// limit of the parent (64 MiB) is set before anything below it exists; no
// process ever joins. Cleanup removes the children, then the parent.
func newSweepTree(b *testing.B, h *cgroups.Hierarchies) *sweepTree {
	b.Helper()
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		b.Fatal(err)
	}
	t := &sweepTree{parent: "/" + env.RunID() + "-sweep-" + hex.EncodeToString(rnd[:])}
	b.Cleanup(func() {
		if err := t.remove(); err != nil {
			b.Errorf("remove the sweep cgroups: %v", err)
		}
	})
	var roots []*cgroups.Mount
	if h.Mode == cgroups.Unified {
		roots = []*cgroups.Mount{h.Unified}
	} else {
		for _, c := range []string{"memory", "cpu", "cpuacct", "pids"} {
			m := h.V1[c]
			if m == nil {
				b.Fatalf("no v1 %s hierarchy", c)
			}
			if !slices.Contains(roots, m) {
				roots = append(roots, m)
			}
		}
		if h.Unified != nil {
			roots = append(roots, h.Unified)
		}
	}
	for _, m := range roots {
		dir, ok := m.Dir(t.parent)
		if !ok {
			b.Fatalf("%s: outside the mounted sub-tree of %s", t.parent, m.Path)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		t.dirs = append(t.dirs, dir)
		switch {
		case m.Version == 1 && slices.Contains(m.Controllers, "memory"):
			writeCgroupFile(b, dir, "memory.limit_in_bytes", "67108864")
		case h.Mode == cgroups.Unified:
			writeCgroupFile(b, dir, "memory.max", "67108864")
			ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
			if err != nil {
				b.Fatal(err)
			}
			var enable []string
			for _, c := range strings.Fields(string(ctl)) {
				if c == "memory" || c == "cpu" || c == "io" || c == "pids" {
					enable = append(enable, "+"+c)
				}
			}
			writeCgroupFile(b, dir, "cgroup.subtree_control", strings.Join(enable, " "))
		}
	}
	for i := range sweepCgroups {
		p := fmt.Sprintf("%s/c%04d", t.parent, i)
		t.paths = append(t.paths, p)
		for _, m := range roots {
			dir, _ := m.Dir(p)
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			t.dirs = append(t.dirs, dir)
		}
	}
	return t
}

func writeCgroupFile(b *testing.B, dir, file, value string) {
	b.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		b.Fatalf("write %q to %s/%s: %v", value, dir, file, err)
	}
}

// remove removes every directory, children first.
func (t *sweepTree) remove() error {
	var errs []error
	for i := len(t.dirs) - 1; i >= 0; i-- {
		if err := os.Remove(t.dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sweepResult is what one sub-benchmark measured, per sweep: wall time,
// CPU time of the process (user + system, all threads), allocations.
type sweepResult struct {
	ns, cpuNs, allocs, bytes float64
}

// cpuTime is the user + system time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs sweep b.N times and returns time and allocations per sweep.
func measure(b *testing.B, sweep func() error) sweepResult {
	b.Helper()
	b.ReportAllocs()
	if err := sweep(); err != nil { // warm up: caches, pools, buffers
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		if err := sweep(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	runtime.ReadMemStats(&after)
	n := float64(b.N)
	res := sweepResult{
		ns:     float64(b.Elapsed().Nanoseconds()) / n,
		cpuNs:  float64(cpu.Nanoseconds()) / n,
		allocs: float64(after.Mallocs-before.Mallocs) / n,
		bytes:  float64(after.TotalAlloc-before.TotalAlloc) / n,
	}
	b.ReportMetric(res.ns/sweepCgroups, "ns/cgroup")
	b.ReportMetric(res.cpuNs/sweepCgroups, "cpu-ns/cgroup")
	b.ReportMetric(res.allocs/sweepCgroups, "allocs/cgroup")
	return res
}

// BenchmarkCgroupSweep reads the statistics of 1000 real cgroups per
// operation: kernelet's Reader (memory, cpu, io, pids and PSI, into reused
// results) against containerd/cgroups/v3 (cgroup1.Load + Stat on hybrid and
// v1 hosts, cgroup2.Load + Stat on v2 hosts; its hierarchy is discovered
// once, not per cgroup). The kernelet sub-benchmarks report the ratios
// measured in the same run: x-less-time, x-less-cpu and x-fewer-allocs —
// first for the same statistics containerd reads, then with PSI added.
func BenchmarkCgroupSweep(b *testing.B) {
	env.RequireRoot(b)
	h, err := cgroups.Discover()
	env.Require(b, err == nil, fmt.Sprintf("cgroups mounted (%v)", err))
	start := time.Now()
	tree := newSweepTree(b, h)
	created := time.Since(start)
	ctx := context.Background()

	var baseline sweepResult
	haveBaseline := false
	b.Run("containerd-cgroups-v3", func(b *testing.B) {
		var sweep func() error
		if h.Mode == cgroups.Unified {
			sweep = func() error {
				for _, p := range tree.paths {
					m, err := cgroup2.Load(p, cgroup2.WithMountpoint(h.Unified.Path))
					if err != nil {
						return err
					}
					if _, err := m.Stat(); err != nil {
						return err
					}
				}
				return nil
			}
		} else {
			subs, err := cgroup1.Default()
			if err != nil {
				b.Fatal(err)
			}
			hier := cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subs, nil })
			sweep = func() error {
				for _, p := range tree.paths {
					cg, err := cgroup1.Load(cgroup1.StaticPath(p), hier)
					if err != nil {
						return fmt.Errorf("load %s: %w", p, err)
					}
					if _, err := cg.Stat(); err != nil {
						return fmt.Errorf("stat %s: %w", p, err)
					}
				}
				return nil
			}
		}
		baseline, haveBaseline = measure(b, sweep), true
	})

	// kernelet reads the same statistics as containerd's Stat (memory, cpu,
	// io, pids) for the like-for-like ratio, then also PSI, which
	// containerd's cgroup v1 Stat does not read (three more files per cgroup).
	for _, run := range []struct {
		name string
		mask cgroups.StatMask
	}{
		{"kernelet-same-stats", cgroups.StatAll &^ cgroups.StatPressure},
		{"kernelet-with-psi", cgroups.StatAll},
	} {
		b.Run(run.name, func(b *testing.B) {
			r, err := cgroups.NewReader(h)
			if err != nil {
				b.Fatal(err)
			}
			stats := make([]cgroups.CgroupStats, len(tree.paths))
			ours := measure(b, func() error {
				for i, p := range tree.paths {
					if err := r.Cgroup(ctx, p, run.mask, &stats[i]); err != nil {
						return err
					}
				}
				return nil
			})
			withPSI := run.mask&cgroups.StatPressure != 0
			if !stats[0].Memory.LimitBytes.Known || (withPSI && h.Unified != nil && !stats[0].Pressure.Memory.Some.Known) {
				b.Errorf("the sweep read nothing: %+v", stats[0])
			}
			if !haveBaseline {
				return
			}
			b.ReportMetric(baseline.ns/ours.ns, "x-less-time")
			b.ReportMetric(baseline.cpuNs/max(ours.cpuNs, 1), "x-less-cpu")
			b.ReportMetric(baseline.allocs/max(ours.allocs, 1), "x-fewer-allocs")
			// (Logged here: a parent benchmark's log is not printed. One
			// line per round of b.N; the last is the reported one.)
			b.Logf("%s: sweep of %d cgroups (%s host, created in %v): kernelet %v (cpu %v), %.0f allocs, %.0f B; "+
				"containerd/cgroups/v3 %v (cpu %v), %.0f allocs, %.0f B: %.1fx less time, %.1fx less cpu, %.0fx fewer allocations",
				run.name, sweepCgroups, h.Mode, created.Round(time.Millisecond),
				time.Duration(ours.ns).Round(time.Microsecond), time.Duration(ours.cpuNs).Round(time.Microsecond), ours.allocs, ours.bytes,
				time.Duration(baseline.ns).Round(time.Microsecond), time.Duration(baseline.cpuNs).Round(time.Microsecond),
				baseline.allocs, baseline.bytes,
				baseline.ns/ours.ns, baseline.cpuNs/max(ours.cpuNs, 1), baseline.allocs/max(ours.allocs, 1))
		})
	}
}
