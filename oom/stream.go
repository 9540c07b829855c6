package oom

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
)

// ErrNoSource is returned by OpenStream when no OOM kill source works.
var ErrNoSource = errors.New("oom: no oom kill source available")

// DefaultWindow is how long a Stream gathers the reports of one kill
// before it emits the merged Kill.
const DefaultWindow = 100 * time.Millisecond

// DefaultKmsgPath is the kernel log device.
const DefaultKmsgPath = "/dev/kmsg"

// StreamConfig configures OpenStream. Sources not asked for (Sources
// zero: every one that works) are not opened.
type StreamConfig struct {
	// Sources to open. Zero: the eBPF source, and only when it is
	// unavailable the fallbacks (memory.events, oom_control, kmsg).
	Sources Sources
	// BPF are the tracer options (Mode forces an attach mode).
	BPF bpf.Options
	// Hierarchies are the host's cgroup mounts (default: Discover).
	Hierarchies *cgroups.Hierarchies
	// Paths maps cgroup ids to paths and back (default: one over a new
	// Reader of Hierarchies).
	Paths *cgroups.PathCache
	// MemoryEventsRoots are cgroups (paths in the cgroup2 hierarchy)
	// whose memory.events is watched: a change there is searched for the
	// descendant whose oom_kill grew; a root without memory.events (the
	// root cgroup) stands for its children at open time. Default: "/".
	MemoryEventsRoots []string
	// OOMControlCgroups are v1 memcgs (paths in the memory hierarchy)
	// whose memory.oom_control eventfd is watched. An eventfd fires only
	// for the memcg itself (and its descendants' OOMs are not reported to
	// an ancestor), so list the limited memcgs. Default: none.
	OOMControlCgroups []string
	// KmsgPath is the kernel log device (default /dev/kmsg).
	KmsgPath string
	// Window is how long reports of one kill are gathered (default
	// DefaultWindow).
	Window time.Duration
	// Complete, when set, emits a kill as soon as every one of these
	// sources that is open has reported it, without waiting for the end
	// of Window (later reports of the same kill are then dropped). Zero:
	// each kill waits for its window.
	Complete Sources
	// Resolver, when set, attributes each kill's cgroup to a pod.
	Resolver Resolver
	// Raw, when set, receives every report of every source before merging,
	// with when the source's notification reached Go (called on the
	// source's goroutine; for latency measurements).
	Raw func(k Kill, arrived time.Time)
}

// Stream is one stream of OOM kills merged from several sources.
type Stream struct {
	kills  chan Kill
	active Sources
	notes  []string
	mode   bpf.AttachMode
	stats  bpf.StatsSource // the eBPF source's tracer, nil without it
	stop   func() error
}

// Kills returns the merged kills. The channel is closed when the stream is
// closed or its context ends.
func (s *Stream) Kills() <-chan Kill { return s.kills }

// Active is the set of sources that are open.
func (s *Stream) Active() Sources { return s.active }

// Notes explain the sources that are not open (one line each).
func (s *Stream) Notes() []string { return s.notes }

// BPFMode is the attach mode of the eBPF source (meaningful when Active
// has SourceBPF).
func (s *Stream) BPFMode() bpf.AttachMode { return s.mode }

// ProgramStats are the run statistics of the eBPF source's programs (none
// without it): the stream is a bpf.StatsSource.
func (s *Stream) ProgramStats() []bpf.ProgramStats {
	if s.stats == nil {
		return nil
	}
	return s.stats.ProgramStats()
}

// Close stops every source and closes Kills.
func (s *Stream) Close() error { return s.stop() }

func counterOf(s, key string) uint64 {
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			return v
		}
	}
	return 0
}

// grownLeaves returns the cgroups whose counter grew from before to now
// while none of their descendants' did (the victim's cgroup when the
// counters are hierarchical).
func grownLeaves(before, now map[string]uint64) []string {
	var grown []string
	for cg, n := range now {
		if n > before[cg] {
			grown = append(grown, cg)
		}
	}
	var leaves []string
	for _, cg := range grown {
		leaf := true
		for _, o := range grown {
			if o != cg && strings.HasPrefix(o, strings.TrimSuffix(cg, "/")+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			leaves = append(leaves, cg)
		}
	}
	return leaves
}
