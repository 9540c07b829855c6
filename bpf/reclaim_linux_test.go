//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestReclaimTracer writes a 256 MiB file from a 64 MiB memcg and reads it
// back from there, in every attach mode that works here: the page cache
// hits the limit over and over, and each direct reclaim must come out as
// an event attributed to the testbox and cat processes in that memcg.
// Other memcgs may reclaim at the same time; the test looks only at this
// one's (by its v1 id) and checks that they are plausible.
func TestReclaimTracer(t *testing.T) {
	requireBPF(t)
	tracefs := tracefsDir(t)
	box := testbox(t)
	dir := diskDir(t)
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			const limit = 64 << 20
			tr := requireMode(t, mode, OpenReclaimTracer, Options{Tracefs: tracefs})
			defer tr.Close()
			cg := newTestCgroup(t, "reclaim", limit)

			var mu sync.Mutex
			var ours []ReclaimStall
			others := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ev := range tr.Events() {
					mu.Lock()
					if ev.MemcgV1ID == cg.memoryID {
						ours = append(ours, ev)
					} else {
						others++
					}
					mu.Unlock()
				}
			}()

			file := filepath.Join(dir, "data-"+mode.String())
			write := cg.command(t, box, "write", "--mib", "256", "--file", file)
			startCmd(t, write)
			if err := write.Wait(); err != nil {
				t.Fatalf("testbox write: %v", err)
			}
			read := cg.command(t, "cat", file)
			read.Stdout = nil // discard
			startCmd(t, read)
			if err := read.Wait(); err != nil {
				t.Fatalf("cat: %v", err)
			}
			time.Sleep(100 * time.Millisecond) // let the last events arrive
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			<-done

			mu.Lock()
			defer mu.Unlock()
			if len(ours) == 0 {
				t.Fatalf("no reclaim event with the test memcg's v1 id %d (%d for other memcgs)", cg.memoryID, others)
			}
			var reclaimed uint64
			var total, longest time.Duration
			comms := map[string]int{}
			for _, ev := range ours {
				if ev.Duration <= 0 || ev.Duration > 10*time.Second {
					t.Errorf("implausible duration: %+v", ev)
				}
				if ev.CgroupID != cg.unifiedID {
					t.Errorf("v2 cgroup id %d, want %d: %+v", ev.CgroupID, cg.unifiedID, ev)
				}
				if ev.Pid != write.Process.Pid && ev.Tgid != write.Process.Pid && ev.Tgid != read.Process.Pid {
					t.Errorf("stall of pid %d/%d %q, not of the workload (%d, %d)", ev.Pid, ev.Tgid, ev.Comm, write.Process.Pid, read.Process.Pid)
				}
				if ev.MemcgLimitBytes != limit || ev.MemcgUsageBytes > limit+1<<20 {
					t.Errorf("memcg usage/limit %d/%d, want limit %d", ev.MemcgUsageBytes, ev.MemcgLimitBytes, limit)
				}
				if !ev.Known.Has(FieldNrReclaimed | FieldGFP | FieldCgroupID | FieldMemcgV1ID | FieldMemcgUsage) {
					t.Errorf("known %v", ev.Known)
				}
				reclaimed += ev.NrReclaimed
				total += ev.Duration
				longest = max(longest, ev.Duration)
				comms[ev.Comm]++
			}
			if reclaimed == 0 {
				t.Error("no event reclaimed any page")
			}
			if ours[0].Mode != mode {
				t.Errorf("mode %v, want %v", ours[0].Mode, mode)
			}
			t.Logf("%v: %d stalls in the test memcg (%d elsewhere), %d pages reclaimed, mean %v, longest %v, by %v; dropped %d",
				mode, len(ours), others, reclaimed, total/time.Duration(len(ours)), longest, comms, tr.Dropped())
		})
	}
}
