package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/containerd"
)

// notifySocket is a unixgram socket standing for systemd's NOTIFY_SOCKET.
type notifySocket struct {
	path string
	conn *net.UnixConn
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdnotify") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &notifySocket{path: filepath.Join(dir, "notify")}
	if s.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.path, Net: "unixgram"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.conn.Close() })
	return s
}

// receive returns the next message, "" when none comes within d.
func (s *notifySocket) receive(t *testing.T, d time.Duration) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := s.conn.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	n, err := s.conn.Read(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// watchdogEnv is the environment systemd gives a service with
// WatchdogSec (WATCHDOG_PID left out: go-systemd then takes the watchdog
// as this process's).
func watchdogEnv(sock, usec string) []string {
	return []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=" + usec, "WATCHDOG_PID="}
}

// kernelet as systemd runs it with WatchdogSec=2s (kubelet's
// SystemdWatchdog): READY=1 once it serves, WATCHDOG=1 every second while
// its health checks (syncloop among them) pass; none while one fails (a
// runtime that never answers); a watchdog of 1 s or less refuses to start.
func TestAgentSystemdWatchdog(t *testing.T) {
	cd := containerd.Shared(t)
	t.Run("healthy", func(t *testing.T) {
		n, _, _ := newAgentWithCleanup(t, cd)
		sock := newNotifySocket(t)
		n.env = watchdogEnv(sock.path, "2000000")
		n.start(t)
		var got []string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			m := sock.receive(t, time.Until(deadline))
			if m != "" {
				got = append(got, m)
			}
			if slices.Contains(got, "READY=1") && countOf(got, "WATCHDOG=1") >= 3 {
				break
			}
		}
		if !slices.Contains(got, "READY=1") || countOf(got, "WATCHDOG=1") < 3 {
			t.Fatalf("notifications %q, want READY=1 and WATCHDOG=1 three times\n%s", got, n.log(t))
		}
		for _, m := range got {
			if m != "READY=1" && m != "WATCHDOG=1" {
				t.Errorf("unexpected notification %q", m)
			}
		}
		resp, err := agentClient.Get(n.url("/healthz?verbose"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "[+]syncloop ok") {
			t.Errorf("healthz?verbose = %d %q", resp.StatusCode, b)
		}
	})
	t.Run("runtime down", func(t *testing.T) {
		n, _, _ := newAgentWithCleanup(t, cd)
		n.endpoint = "unix://" + filepath.Join(t.TempDir(), "none.sock")
		sock := newNotifySocket(t)
		n.env = watchdogEnv(sock.path, "2000000")
		n.start(t)
		// Two rounds that found the runtime check failing: a notification
		// of theirs would be in the socket before their log line.
		for deadline := time.Now().Add(30 * time.Second); strings.Count(n.log(t), "Do not notify watchdog this iteration") < 2; {
			if time.Now().After(deadline) {
				t.Fatalf("no two unhealthy watchdog rounds logged:\n%s", n.log(t))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !strings.Contains(n.log(t), "checker runtime failed") {
			t.Errorf("the log does not name the failing check:\n%s", n.log(t))
		}
		for m := sock.receive(t, 10*time.Millisecond); m != ""; m = sock.receive(t, 10*time.Millisecond) {
			if m != "READY=1" {
				t.Errorf("notification %q while the runtime check fails", m)
			}
		}
	})
	t.Run("timeout too small", func(t *testing.T) {
		n := newAgentNode(t, cd)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, n.bin, "run", "--config", n.cfg, "--container-runtime-endpoint", n.endpoint, "--root-dir", n.root,
			"--hostname-override", n.node)
		cmd.Env = append(os.Environ(), watchdogEnv(newNotifySocket(t).path, "1000000")...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "configure watchdog timeout too small: 1s") {
			t.Errorf("kernelet with WATCHDOG_USEC=1000000: %v\n%s", err, out)
		}
	})
}

func countOf(list []string, s string) int {
	n := 0
	for _, e := range list {
		if e == s {
			n++
		}
	}
	return n
}
