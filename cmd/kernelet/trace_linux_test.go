package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// syncBuffer is a bytes.Buffer safe to read while Main writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// traceCgroup makes a 32 MiB v1 memcg (limit set before anything joins)
// and the same path in the unified tree, removed when the test ends.
func traceCgroup(t *testing.T) (name, memoryDir, unifiedDir string) {
	t.Helper()
	env.RequireRoot(t)
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	env.Require(t, h.V1["memory"] != nil && h.Unified != nil, "a hybrid cgroup host (v1 memory hierarchy and a cgroup2 mount)")
	name = fmt.Sprintf("/%s-trace-%d", env.RunID(), time.Now().UnixNano()%1e9)
	memoryDir, _ = h.V1["memory"].Dir(name)
	unifiedDir, _ = h.Unified.Dir(name)
	for _, dir := range []string{memoryDir, unifiedDir} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := os.Remove(dir)
				if err == nil || errors.Is(err, os.ErrNotExist) {
					return
				}
				if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
					t.Errorf("remove %s: %v", dir, err)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(memoryDir, "memory.limit_in_bytes"), []byte(strconv.Itoa(32<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	return name, memoryDir, unifiedDir
}

// oomOnce runs testbox into an OOM kill in the cgroup and returns its pid
// once it is dead.
func oomOnce(t *testing.T, memoryDir, unifiedDir string) int {
	t.Helper()
	box, err := images.TestboxBinary()
	if err != nil {
		t.Fatal(err)
	}
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", memoryDir, unifiedDir, box, "alloc", "--mib", "200")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("testbox was not OOM killed within 20s")
	}
	return cmd.Process.Pid
}

// TestTraceOOM runs `kernelet trace oom --json --count 1` in-process and
// causes OOM kills (until the trace has one): the line names the victim.
// Without eBPF (--mode off) the fallbacks give the same victim.
func TestTraceOOM(t *testing.T) {
	for _, mode := range []string{"auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			name, mem, uni := traceCgroup(t)
			var out, errb syncBuffer
			code := make(chan int, 1)
			go func() {
				code <- Main(t.Context(), []string{"trace", "oom", "--json", "--count", "1", "--timeout", "60s", "--mode", mode, "--cgroup", name}, &out, &errb)
			}()
			pids := map[int]bool{}
			var rc int
		loop:
			for range 20 {
				pids[oomOnce(t, mem, uni)] = true
				select {
				case rc = <-code:
					break loop
				case <-time.After(500 * time.Millisecond):
				}
			}
			if rc != 0 {
				t.Fatalf("exit %d, stderr: %s", rc, errb.String())
			}
			var row struct {
				Kind, Comm, Cgroup string
				Pid                int
				Event              struct{ Sources string }
			}
			if err := json.Unmarshal([]byte(out.String()), &row); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			t.Logf("%s", out.String())
			if row.Kind != "oom" || row.Comm != "testbox" || row.Cgroup != name || !pids[row.Pid] {
				t.Errorf("row %+v: want a testbox kill in %s among pids %v", row, name, pids)
			}
			want := "bpf"
			if mode == "off" {
				want = "oom_control+kmsg"
			}
			if row.Event.Sources != want {
				t.Errorf("sources %q, want %q", row.Event.Sources, want)
			}
			if strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
				t.Errorf("more than one line: %q", out.String())
			}
		})
	}
}

func TestTraceUsage(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no kind":         {[]string{"trace"}, 2, "usage: kernelet trace"},
		"unknown kind":    {[]string{"trace", "fork"}, 2, "unknown event kind"},
		"bad mode":        {[]string{"trace", "oom", "--mode", "kprobe"}, 2, "unknown attach mode"},
		"pod without cri": {[]string{"trace", "oom", "--pod", "a/b", "--container-runtime-endpoint="}, 2, "--pod needs --container-runtime-endpoint"},
		"two kinds":       {[]string{"trace", "oom", "exit"}, 2, "unexpected arguments"},
		"reclaim off":     {[]string{"trace", "reclaim", "--mode", "off"}, 1, "need eBPF"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errs, tc.want)
			}
		})
	}
}

// TestTraceInterrupt: the built binary, interrupted (Ctrl-C), exits 0.
func TestTraceInterrupt(t *testing.T) {
	env.RequireRoot(t)
	bin := filepath.Join(t.TempDir(), "kernelet")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, kind := range []string{"oom", "exit"} {
		var errb syncBuffer
		cmd := exec.Command(bin, "trace", kind)
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("trace %s after Ctrl-C: %v (want exit 0)\nstderr: %s", kind, err, errb.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("trace %s did not end within 10s of Ctrl-C", kind)
		}
	}
}

// TestTraceBPFKinds: `trace reclaim|exit|cgroup --json --count 1 --cgroup`
// report what an OOM run in the test's cgroup does (it reclaims before it
// is killed, and exits) and the test's own mkdir.
func TestTraceBPFKinds(t *testing.T) {
	env.RequireRoot(t)
	for _, kind := range []string{"reclaim", "exit", "cgroup"} {
		t.Run(kind, func(t *testing.T) {
			name, mem, uni := traceCgroup(t)
			filter := name
			if kind == "cgroup" {
				filter = name + "/child"
			}
			var out, errb syncBuffer
			code := make(chan int, 1)
			go func() {
				code <- Main(t.Context(), []string{"trace", kind, "--json", "--count", "1", "--timeout", "60s", "--cgroup", filter}, &out, &errb)
			}()
			var rc int
		loop:
			for range 20 {
				time.Sleep(300 * time.Millisecond)
				if kind == "cgroup" {
					dir := filepath.Join(uni, "child")
					if err := os.Mkdir(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(dir); err != nil {
						t.Fatal(err)
					}
				} else {
					oomOnce(t, mem, uni)
				}
				select {
				case rc = <-code:
					break loop
				case <-time.After(300 * time.Millisecond):
				}
			}
			if rc != 0 {
				t.Fatalf("exit %d, stderr: %s", rc, errb.String())
			}
			var row struct{ Kind, Cgroup, Comm string }
			if err := json.Unmarshal([]byte(out.String()), &row); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			t.Logf("%s", out.String())
			if row.Kind != kind || row.Cgroup != filter {
				t.Errorf("row %+v, want a %s event of %s", row, kind, filter)
			}
		})
	}
}
