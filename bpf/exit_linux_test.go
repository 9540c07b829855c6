//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestExitTracer checks, in every attach mode that works here, the exit of
// `testbox exit --code 3` (code 3, no signal) and of a SIGKILLed testbox
// (signal 9): one event per process, with its pid, comm, parent and
// cgroup, and the peak RSS of a process that touched 64 MiB.
func TestExitTracer(t *testing.T) {
	requireBPF(t)
	tracefs := tracefsDir(t)
	box := testbox(t)
	cgroupID := ownCgroupV2(t)
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := requireMode(t, mode, OpenExitTracer, Options{Tracefs: tracefs})
			defer tr.Close()

			// Exit code 3.
			cmd := exec.Command(box, "exit", "--code", "3")
			startCmd(t, cmd)
			if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 3 {
				t.Fatalf("testbox exit --code 3: %v", err)
			}
			ev := await(t, tr.Events(), 10*time.Second, func(e ProcessExit) bool { return e.Tgid == cmd.Process.Pid })
			t.Logf("%v: exit: %+v", mode, ev)
			want := FieldPid | FieldTgid | FieldComm | FieldExitCode | FieldPPid | FieldStartTime | FieldMaxRSS | FieldCgroupID
			if !ev.Known.Has(want) {
				t.Errorf("known %v, missing %v", ev.Known, want&^ev.Known)
			}
			if ev.ExitCode != 3 || ev.Signal != 0 || ev.CoreDumped || ev.Status != 3<<8 {
				t.Errorf("exit code %d signal %d core %v status %#x, want code 3 only", ev.ExitCode, ev.Signal, ev.CoreDumped, ev.Status)
			}
			if !ev.GroupDead || ev.Comm != "testbox" || ev.PPid != syscall.Getpid() || ev.Mode != mode {
				t.Errorf("group dead %v, comm %q, ppid %d, mode %v: want true, testbox, %d, %v", ev.GroupDead, ev.Comm, ev.PPid, ev.Mode, syscall.Getpid(), mode)
			}
			if ev.CgroupID != cgroupID {
				t.Errorf("cgroup id %d, want %d (inherited from the test)", ev.CgroupID, cgroupID)
			}
			if ev.Start.After(ev.Time) || ev.Time.Sub(ev.Start) > time.Minute {
				t.Errorf("start %v, exit %v", ev.Start, ev.Time)
			}

			// SIGKILL.
			cmd = exec.Command(box, "sleep")
			startCmd(t, cmd)
			time.Sleep(50 * time.Millisecond) // let it start its threads
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			ev = await(t, tr.Events(), 10*time.Second, func(e ProcessExit) bool { return e.Tgid == cmd.Process.Pid })
			t.Logf("%v: killed: %+v", mode, ev)
			if ev.Signal != 9 || ev.ExitCode != 0 || !ev.GroupDead {
				t.Errorf("signal %d exit code %d group dead %v, want signal 9", ev.Signal, ev.ExitCode, ev.GroupDead)
			}

			// Peak RSS.
			cmd = exec.Command(box, "alloc", "--mib", "64")
			startCmd(t, cmd)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("testbox alloc: %v", err)
			}
			ev = await(t, tr.Events(), 10*time.Second, func(e ProcessExit) bool { return e.Tgid == cmd.Process.Pid })
			if ev.MaxRSSBytes < 64<<20 || ev.MaxRSSBytes > 256<<20 {
				t.Errorf("maxrss %d after touching 64 MiB", ev.MaxRSSBytes)
			}
			t.Logf("%v: maxrss of testbox alloc --mib 64: %d MiB", mode, ev.MaxRSSBytes>>20)
		})
	}
}

// TestExitTracerOnePerProcess checks that a multi-threaded process yields
// exactly one event by default, and one per thread with AllThreads.
func TestExitTracerOnePerProcess(t *testing.T) {
	requireBPF(t)
	box := testbox(t)
	count := func(t *testing.T, opts Options) (events, threads int) {
		tr, err := OpenExitTracer(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		cmd := exec.Command(box, "exit", "--code", "0", "--after", "100ms")
		startCmd(t, cmd)
		_ = cmd.Wait()
		// A marker process after it: its exit comes after every thread's.
		marker := exec.Command(box, "exit", "--code", "7")
		startCmd(t, marker)
		_ = marker.Wait()
		tids := map[int]bool{}
		for {
			ev := await(t, tr.Events(), 10*time.Second, func(e ProcessExit) bool {
				return e.Tgid == cmd.Process.Pid || e.Tgid == marker.Process.Pid
			})
			if ev.Tgid == marker.Process.Pid {
				if !opts.AllThreads || ev.GroupDead {
					return events, len(tids)
				}
				continue
			}
			events++
			tids[ev.Pid] = true
		}
	}
	if n, _ := count(t, Options{}); n != 1 {
		t.Errorf("default options: %d events for one process, want 1", n)
	}
	n, threads := count(t, Options{AllThreads: true})
	if n < 2 || n != threads {
		t.Errorf("AllThreads: %d events for %d threads of a Go process, want one per thread (several)", n, threads)
	}
	t.Logf("AllThreads: %d thread exits", n)
}
