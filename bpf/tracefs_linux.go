//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/internal/mountinfo"
)

// Classic tracepoints: tracefs gives each one an id and a record format;
// a perf event of type PERF_TYPE_TRACEPOINT with that id carries the BPF
// program. This does not use cilium/ebpf's link.Tracepoint because that
// only looks for tracefs at /sys/kernel/tracing and /sys/kernel/debug/
// tracing, and Options.Tracefs may be elsewhere.

const tracefsMagic = 0x74726163 // TRACEFS_MAGIC

// errNoTracefs is returned (wrapped) when no tracefs is mounted.
var errNoTracefs = errors.New("tracefs not mounted")

// findTracefs returns where tracefs is mounted: dir when set (which must
// be a tracefs), else the first tracefs mount of this mount namespace,
// else debugfs's automount at <debugfs>/tracing.
func findTracefs(dir string) (string, error) {
	if dir != "" {
		if !isTracefs(dir) {
			return "", fmt.Errorf("%w at %s", errNoTracefs, dir)
		}
		return dir, nil
	}
	mounts, err := mountinfo.Self(func(e *mountinfo.Entry) bool { return e.FSType == "tracefs" || e.FSType == "debugfs" })
	if err != nil {
		return "", fmt.Errorf("find tracefs: %w", err)
	}
	var debugfs []string
	for _, m := range mounts {
		if m.FSType == "tracefs" && isTracefs(m.Point) {
			return m.Point, nil
		}
		if m.FSType == "debugfs" {
			debugfs = append(debugfs, m.Point)
		}
	}
	for _, d := range debugfs {
		if p := filepath.Join(d, "tracing"); isTracefs(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (mount -t tracefs tracefs /sys/kernel/tracing)", errNoTracefs)
}

func isTracefs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && uint32(st.Type) == tracefsMagic
}

// readTracepointFormat reads and parses tracefs/events/group/name/format.
func readTracepointFormat(tracefs, group, name string) (tpFormat, error) {
	path := filepath.Join(tracefs, "events", group, name, "format")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return tpFormat{}, fmt.Errorf("tracepoint %s/%s: not in tracefs (%s): %w", group, name, path, err)
	}
	if err != nil {
		return tpFormat{}, fmt.Errorf("tracepoint %s/%s: %w", group, name, err)
	}
	f, err := parseTracepointFormat(string(b))
	if err != nil {
		return tpFormat{}, fmt.Errorf("tracepoint %s/%s: %w", group, name, err)
	}
	return f, nil
}

// perfAttachment is a tracepoint perf event with a program on it.
type perfAttachment struct {
	link link.Link // nil when attached with the ioctl (before Linux 5.15)
	fd   int
}

func (p *perfAttachment) Close() error {
	var errs []error
	if p.link != nil {
		errs = append(errs, p.link.Close())
	}
	errs = append(errs, unix.Close(p.fd))
	return errors.Join(errs...)
}

// attachTracepoint opens the tracepoint's perf event (one for all CPUs and
// tasks: the program runs wherever the tracepoint fires) and attaches prog
// to it with a BPF link, or with PERF_EVENT_IOC_SET_BPF where links to perf
// events are not supported.
func attachTracepoint(prog *ebpf.Program, tracefs, group, name string) (*perfAttachment, error) {
	f, err := readTracepointFormat(tracefs, group, name)
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      uint64(f.ID),
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open tracepoint %s/%s (id %d): %w", group, name, f.ID, err)
	}
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err == nil {
		return &perfAttachment{link: l, fd: fd}, nil
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attach to tracepoint %s/%s: %w", group, name, err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("enable tracepoint %s/%s: %w", group, name, err)
	}
	return &perfAttachment{fd: fd}, nil
}
