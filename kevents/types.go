package kevents

import (
	"time"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/oom"
)

// Options configure Open.
type Options struct {
	// BPFOff forces eBPF off: no tracer is opened, the path cache walks
	// the hierarchy and the OOM stream uses its fallbacks.
	BPFOff bool
	// BPF are the tracer options (Mode forces an attach mode).
	BPF bpf.Options
	// NoCgroupTracer leaves the path cache without the eBPF cgroup
	// tracer (e.g. when the caller traces cgroup events itself).
	NoCgroupTracer bool
}

// OOMOptions configure Env.OpenOOM. Zero values take the oom package's
// defaults.
type OOMOptions struct {
	// Resolver names the pod and container of each kill.
	Resolver oom.Resolver
	// MemoryEventsRoots and OOMControlCgroups are the fallbacks' cgroups
	// (oom.StreamConfig).
	MemoryEventsRoots, OOMControlCgroups []string
	// WithKmsg opens /dev/kmsg beside eBPF (it adds the limiting memcg
	// and whether the OOM was global) and emits each kill once both
	// reported it; with the fallbacks, once kmsg did (the victim's
	// identity); else when the merge window ends. Without it a kill waits
	// for its window unless eBPF alone reports it.
	WithKmsg bool
	// Window bounds how long a kill waits for the other sources' reports
	// (oom.StreamConfig.Window; 0: oom.DefaultWindow).
	Window time.Duration
	// Raw receives every report before merging (oom.StreamConfig.Raw).
	Raw func(k oom.Kill, arrived time.Time)
}
