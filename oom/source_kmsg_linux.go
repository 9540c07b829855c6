package oom

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/cgroups"
)

// kmsgSource follows the kernel log (/dev/kmsg) from its end: the OOM
// report's summary line (constraint, limiting memcg, victim memcg, pid,
// comm) and the "Killed process" line (memory of the victim).
type kmsgSource struct {
	cfg *StreamConfig
	f   *os.File
}

func openKmsgSource(_ context.Context, cfg *StreamConfig) (source, error) {
	fd, err := unix.Open(cfg.KmsgPath, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.KmsgPath, err)
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("seek to the end of %s: %w", cfg.KmsgPath, err)
	}
	return &kmsgSource{cfg: cfg, f: os.NewFile(uintptr(fd), cfg.KmsgPath)}, nil
}

func (s *kmsgSource) run(send sendFunc) {
	buf := make([]byte, 16<<10)
	var groups KmsgGroups
	for {
		n, err := s.f.Read(buf)
		now := time.Now()
		switch {
		case errors.Is(err, syscall.EPIPE):
			continue // records were overwritten: go on with the next
		case err != nil:
			return // closed
		}
		rec, perr := ParseKmsg(string(buf[:n]))
		if perr != nil || !groups.Apply(&rec) {
			continue
		}
		k := kmsgKill(s.cfg.Paths, rec)
		if rec.Kind == KmsgKilled {
			// The line names the task the kernel marked, which may be a
			// thread (memory.oom.group marks a process again through
			// another thread): name its process, as eBPF does, while it
			// is not reaped yet.
			if tgid, ok := procTgid(k.Pid); ok && tgid != k.Pid {
				k.Pid, k.Tid = tgid, k.Pid
			}
		}
		send(k, now)
	}
}

func (s *kmsgSource) Close() error {
	if err := s.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// kmsgKill converts a kmsg record; its time is converted from the
// kernel's clock since boot.
func kmsgKill(paths *cgroups.PathCache, r KmsgRecord) Kill {
	k := Kill{Time: wallOfMonotonic(r.Since), Sources: SourceKmsg, Known: r.Known, Pid: r.Pid, Comm: r.Comm, UID: r.UID,
		Global: r.Global, Constraint: r.Constraint, OOMScoreAdj: r.OOMScoreAdj, TotalVMBytes: r.TotalVMBytes,
		AnonRSSBytes: r.AnonRSSBytes, FileRSSBytes: r.FileRSSBytes, ShmemRSSBytes: r.ShmemRSSBytes,
		PgtablesBytes: r.PgtablesBytes, Memcg: r.TaskMemcg, OOMMemcg: r.OOMMemcg}
	if k.Known.Has(FieldMemcg) {
		if id, err := paths.ID(cgroups.MemcgID, k.Memcg); err == nil {
			k.MemcgID, k.Known = id, k.Known|FieldMemcgID
		}
	}
	if k.Known.Has(FieldOOMMemcg) {
		if id, err := paths.ID(cgroups.MemcgID, k.OOMMemcg); err == nil {
			k.OOMMemcgID = id
		}
	}
	return k
}

// wallOfMonotonic converts a CLOCK_MONOTONIC instant to wall time.
func wallOfMonotonic(d time.Duration) time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now()
	}
	now := time.Duration(ts.Nano())
	return time.Now().Add(d - now)
}

// procTgid is the process (thread group) of task id, from
// /proc/<id>/status; false when the task is gone or unreadable.
func procTgid(id int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", id))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil && n > 0
		}
	}
	return 0, false
}
