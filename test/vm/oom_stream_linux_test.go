//go:build vmtest

package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
)

// TestOOMStream provokes a memory.max OOM kill on the cgroup v2 kernel and
// reads it from the merged oom.Stream: from the eBPF source (the Kill
// carries the v2 cgroup id, which is also the memcg id here), and with
// BPF off from the fallbacks, where memory.events finds the cgroup and
// kmsg adds the victim (merged into one Kill by the cgroup path).
func TestOOMStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources oom.Sources
		want    oom.Sources
	}{
		{"bpf", oom.SourceBPF, oom.SourceBPF},
		{"fallbacks", oom.SourceMemoryEvents | oom.SourceOOMControl | oom.SourceKmsg, oom.SourceMemoryEvents | oom.SourceKmsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 32 << 20
			cg := newCgroup(t, "oom-stream")
			writeFile(t, filepath.Join(cg, "memory.max"), strconv.Itoa(limit))
			if _, err := os.Stat(filepath.Join(cg, "memory.swap.max")); err == nil {
				writeFile(t, filepath.Join(cg, "memory.swap.max"), "0")
			}
			fi, err := os.Stat(cg)
			if err != nil {
				t.Fatal(err)
			}
			wantID := fi.Sys().(*syscall.Stat_t).Ino
			name := "/" + filepath.Base(cg)

			s, err := oom.OpenStream(t.Context(), oom.StreamConfig{Sources: tc.sources})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Active() != tc.want {
				t.Fatalf("active sources %v, want %v (notes %v)", s.Active(), tc.want, s.Notes())
			}
			pid := runAllocIn(t, cg, 128)
			var k oom.Kill
			timeout := time.After(20 * time.Second)
		wait:
			for {
				select {
				case k = <-s.Kills():
					if k.Pid == pid || (k.Pid == 0 && k.Cgroup == name) {
						break wait
					}
					t.Logf("other kill: %+v", k)
				case <-timeout:
					t.Fatalf("no kill of pid %d in %s", pid, name)
				}
			}
			t.Logf("%s: %#v", tc.name, k)
			fact(t, "oom.stream."+tc.name, fmt.Sprintf("sources=%s pid=%d cgroup_id=%d want=%d", k.Sources, k.Pid, k.CgroupID, wantID))
			if k.Sources != tc.want {
				t.Errorf("sources %v, want %v", k.Sources, tc.want)
			}
			if k.CgroupID != wantID || k.MemcgID != wantID || k.Cgroup != name {
				t.Errorf("cgroup id %d memcg id %d path %q, want %d and %s", k.CgroupID, k.MemcgID, k.Cgroup, wantID, name)
			}
			if k.Pid != pid {
				t.Errorf("pid %d, want %d", k.Pid, pid)
			}
		})
	}
}

// runAllocIn starts the test binary allocating mib MiB directly inside
// cgroup dir (CLONE_INTO_CGROUP), waits for it to be SIGKILLed, and
// returns its pid.
func runAllocIn(t *testing.T, dir string, mib int) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), childAllocEnv+"="+strconv.Itoa(mib))
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", cmd.ProcessState)
	}
	return cmd.Process.Pid
}

// TestOOMStreamDaemon reads a memory.max OOM kill through the stream as
// `kernelet run` opens it (kevents, kmsg beside eBPF, a 50 ms window):
// with eBPF the kill carries the victim (eBPF) and the limiting memcg
// (kmsg); with eBPF forced off memory.events and kmsg, and the kill is
// emitted once kmsg named the victim. Both name the victim's cgroup.
func TestOOMStreamDaemon(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  bool
		want oom.Sources
	}{
		{"bpf", false, oom.SourceBPF | oom.SourceKmsg},
		{"bpf-off", true, oom.SourceMemoryEvents | oom.SourceKmsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 32 << 20
			cg := newCgroup(t, "oom-daemon")
			writeFile(t, filepath.Join(cg, "memory.max"), strconv.Itoa(limit))
			if _, err := os.Stat(filepath.Join(cg, "memory.swap.max")); err == nil {
				writeFile(t, filepath.Join(cg, "memory.swap.max"), "0")
			}
			name := "/" + filepath.Base(cg)
			env, err := kevents.Open(t.Context(), kevents.Options{BPFOff: tc.off})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			s, err := env.OpenOOM(t.Context(), kevents.OOMOptions{WithKmsg: true, Window: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Active()&tc.want != tc.want || s.Fallback() != tc.off {
				t.Fatalf("active %v (fallback %v), want %v (notes %v)", s.Active(), s.Fallback(), tc.want, s.Notes())
			}
			pid := runAllocIn(t, cg, 128)
			var k oom.Kill
			timeout := time.After(20 * time.Second)
		wait:
			for {
				select {
				case k = <-s.Kills():
					if k.Pid == pid {
						break wait
					}
					t.Logf("other kill: %+v", k)
				case <-timeout:
					t.Fatalf("no kill of pid %d in %s", pid, name)
				}
			}
			t.Logf("%s via %s: %#v", tc.name, s.Via(), k)
			fact(t, "oom.daemon."+tc.name, fmt.Sprintf("via=%s sources=%s pid=%d memcg=%s oom_memcg=%s", s.Via(), k.Sources, k.Pid, k.Memcg, k.OOMMemcg))
			if k.Sources&oom.SourceKmsg == 0 || k.Memcg != name || k.OOMMemcg != name || k.Global {
				t.Errorf("kill %+v: want kmsg's report of a memcg OOM of %s", k, name)
			}
			if !tc.off && k.Sources&oom.SourceBPF == 0 {
				t.Errorf("sources %v: want bpf", k.Sources)
			}
		})
	}
}

// TestOOMStreamGlobal: a process of an unlimited cgroup that allocates more
// than the VM's memory (oom_score_adj 1000, so the global OOM killer picks
// it) is reported by the stream as `kernelet run` opens it as a global OOM
// (kmsg's constraint, merged with eBPF's victim): what the agent turns
// into kubelet's SystemOOM node event.
func TestOOMStreamGlobal(t *testing.T) {
	cg := newCgroup(t, "oom-global")
	env, err := kevents.Open(t.Context(), kevents.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	s, err := env.OpenOOM(t.Context(), kevents.OOMOptions{WithKmsg: true, Window: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Setenv(childOOMScoreAdjEnv, "1000")
	pid := runAllocIn(t, cg, 1024) // twice the VM's memory
	var k oom.Kill
	timeout := time.After(20 * time.Second)
wait:
	for {
		select {
		case k = <-s.Kills():
			if k.Pid == pid {
				break wait
			}
			t.Logf("other kill: %+v", k)
		case <-timeout:
			t.Fatalf("no kill of pid %d", pid)
		}
	}
	t.Logf("global via %s: %#v", s.Via(), k)
	fact(t, "oom.daemon.global", fmt.Sprintf("via=%s sources=%s pid=%d global=%v constraint=%s", s.Via(), k.Sources, k.Pid, k.Global, k.Constraint))
	if !k.Known.Has(oom.FieldGlobal) || !k.Global || k.Sources&oom.SourceKmsg == 0 {
		t.Errorf("kill %+v: want kmsg's report of a global OOM", k)
	}
}
