package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
)

// traceFlags are the flags of `kernelet trace`.
type traceFlags struct {
	kind            string
	json            bool
	cgroupPrefix    string
	pod             string
	minDuration     time.Duration
	count           int
	timeout         time.Duration
	runtimeEndpoint string
	mode            string
}

// traceRow is one event as printed: the common columns and the event.
type traceRow struct {
	Kind   string      `json:"kind"`
	Time   time.Time   `json:"time"`
	Pid    int         `json:"pid"`
	Comm   string      `json:"comm"`
	Cgroup string      `json:"cgroup,omitempty"`
	Pod    *oom.PodRef `json:"pod,omitempty"`
	// Detail is the kind's key fields, for the table.
	Detail string `json:"-"`
	Event  any    `json:"event"`
}

// traceCommand: `kernelet trace oom|reclaim|exit|cgroup [flags]` streams
// kernel events until --count events, --timeout or Ctrl-C.
func traceCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("trace", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kernelet trace oom|reclaim|exit|cgroup [flags]")
		fs.PrintDefaults()
	}
	var f traceFlags
	fs.BoolVar(&f.json, "json", false, "print one JSON object per line instead of a table")
	fs.StringVar(&f.cgroupPrefix, "cgroup", "", "only events of cgroups under this path (oom without eBPF on cgroup v1: the memcg whose oom_control is watched)")
	fs.StringVar(&f.pod, "pod", "", "only events of pod NAMESPACE/NAME (asks the CRI runtime)")
	fs.DurationVar(&f.minDuration, "min-duration", 0, "reclaim: only stalls at least this long")
	fs.IntVar(&f.count, "count", 0, "exit after this many events (0: no limit)")
	fs.DurationVar(&f.timeout, "timeout", 0, "exit after this long (0: no limit)")
	fs.StringVar(&f.runtimeEndpoint, "container-runtime-endpoint", config.DefaultContainerRuntimeEndpoint,
		"CRI endpoint (unix://...) to name the pod and container of each event; empty: none")
	fl := *fs.Lookup("container-runtime-endpoint")
	fl.Name, fl.Deprecated = "runtime-endpoint", "use --container-runtime-endpoint"
	fs.AddFlag(&fl)
	fs.StringVar(&f.mode, "mode", "auto", "eBPF attach mode: auto, tp_btf, raw_tp, tracepoint, or off (oom: kernel fallbacks only)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch fs.NArg() {
	case 0:
		fs.Usage()
		return 2
	case 1:
		f.kind = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "kernelet trace: unexpected arguments %q\n", fs.Args()[1:])
		return 2
	}
	mode, err := f.check()
	if err != nil {
		fmt.Fprintf(stderr, "kernelet trace: %v\n", err)
		return 2
	}
	off := f.mode == "off"
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	// Ctrl-C and SIGTERM end the trace cleanly (exit 0).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	t := &tracer{f: f, stderr: stderr, opts: bpf.Options{Mode: mode, MinStall: f.minDuration}, off: off}
	if err := t.setup(ctx); err != nil {
		fmt.Fprintf(stderr, "kernelet trace %s: %v\n", f.kind, err)
		return 1
	}
	defer t.close()
	rows, err := t.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "kernelet trace %s: %v\n", f.kind, err)
		return 1
	}
	fmt.Fprintf(stderr, "kernelet trace %s: tracing via %s\n", f.kind, t.via)
	if !f.json {
		fmt.Fprintf(stdout, "%-15s %7s %-16s %-40s %-32s %s\n", "TIME", "PID", "COMM", "CGROUP", "POD/CONTAINER", "DETAILS")
	}
	enc := json.NewEncoder(stdout)
	n := 0
	for row := range rows {
		if !t.keep(&row) {
			continue
		}
		if err := writeTraceRow(stdout, enc, f.json, &row); err != nil {
			fmt.Fprintf(stderr, "kernelet trace: %v\n", err)
			return 1
		}
		n++
		if f.count > 0 && n >= f.count {
			return 0
		}
	}
	if f.count > 0 && n < f.count && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "kernelet trace %s: %d of %d events before the timeout\n", f.kind, n, f.count)
		return 1
	}
	return 0
}

// check validates the flags after parsing and returns the attach mode
// (ModeAuto with --mode off).
func (f *traceFlags) check() (bpf.AttachMode, error) {
	switch f.kind {
	case "oom", "reclaim", "exit", "cgroup":
	default:
		return 0, fmt.Errorf("unknown event kind %q (want oom, reclaim, exit or cgroup)", f.kind)
	}
	var mode bpf.AttachMode
	if f.mode != "off" {
		m, err := bpf.ParseAttachMode(f.mode)
		if err != nil {
			return 0, fmt.Errorf("--mode: %w", err)
		}
		mode = m
	}
	if f.pod != "" && !strings.Contains(f.pod, "/") {
		return 0, errors.New("--pod wants NAMESPACE/NAME")
	}
	if f.pod != "" && f.runtimeEndpoint == "" {
		return 0, errors.New("--pod needs --container-runtime-endpoint")
	}
	return mode, nil
}

// writeTraceRow prints one row: a JSON object with asJSON, else a line of
// the table.
func writeTraceRow(w io.Writer, enc *json.Encoder, asJSON bool, row *traceRow) error {
	if asJSON {
		return enc.Encode(row)
	}
	pod := "-"
	if row.Pod != nil {
		pod = row.Pod.String()
	}
	cg := row.Cgroup
	if cg == "" {
		cg = "-"
	}
	fmt.Fprintf(w, "%-15s %7d %-16s %-40s %-32s %s\n", row.Time.Format("15:04:05.000000"), row.Pid, row.Comm, cg, pod, row.Detail)
	return nil
}

// tracer holds what one `kernelet trace` run opened.
type tracer struct {
	f        traceFlags
	stderr   io.Writer
	opts     bpf.Options
	off      bool
	env      *kevents.Env
	resolver oom.Resolver
	closers  []func()
	// via says what the events come from, once open succeeded.
	via string
}

func (t *tracer) close() {
	for i := len(t.closers) - 1; i >= 0; i-- {
		t.closers[i]()
	}
}

// setup opens the kernel-event environment (cgroup hierarchies, the id →
// path cache fed by the eBPF cgroup tracer where it works) and the pod
// resolver.
func (t *tracer) setup(ctx context.Context) error {
	env, err := kevents.Open(ctx, kevents.Options{BPFOff: t.off, BPF: t.opts, NoCgroupTracer: t.f.kind == "cgroup"})
	if err != nil {
		return err
	}
	t.env = env
	t.closers = append(t.closers, func() { _ = env.Close() })
	if t.f.runtimeEndpoint != "" {
		rt, err := runtime.Connect(ctx, t.f.runtimeEndpoint, 5*time.Second)
		if err == nil {
			err = rt.Ready(ctx)
		}
		if err != nil {
			fmt.Fprintf(t.stderr, "kernelet trace: runtime %s does not answer (%v): pods are not shown\n", t.f.runtimeEndpoint, err)
		} else {
			t.closers = append(t.closers, func() { _ = rt.Close(context.Background()) })
			t.resolver = runtime.NewCgroupResolver(rt.Service())
		}
	}
	return nil
}

// keep applies the --cgroup and --pod filters.
func (t *tracer) keep(r *traceRow) bool {
	if p := t.f.cgroupPrefix; p != "" {
		p = strings.TrimSuffix(p, "/")
		if r.Cgroup != p && !strings.HasPrefix(r.Cgroup, p+"/") {
			return false
		}
	}
	if t.f.pod != "" {
		if r.Pod == nil || r.Pod.Namespace+"/"+r.Pod.Name != t.f.pod {
			return false
		}
	}
	return true
}

// resolve names the pod of cgroup path cg.
func (t *tracer) resolve(ctx context.Context, cg string) *oom.PodRef {
	if t.resolver == nil || cg == "" {
		return nil
	}
	if ref, ok := t.resolver.Resolve(ctx, cg); ok {
		return &ref
	}
	return nil
}

// traceNeeds is what each eBPF-only kind needs, for its error.
var traceNeeds = map[string]string{
	"reclaim": "eBPF tracing of vmscan/mm_vmscan_memcg_reclaim_begin/end (CAP_BPF, CAP_PERFMON, ring buffers)",
	"exit":    "eBPF tracing of sched/sched_process_exit (CAP_BPF, CAP_PERFMON, ring buffers)",
	"cgroup":  "eBPF tracing of cgroup/cgroup_mkdir and cgroup_rmdir (CAP_BPF, CAP_PERFMON, ring buffers)",
}

// open starts the source of the kind and returns its rows; the channel
// is closed when ctx ends.
func (t *tracer) open(ctx context.Context) (<-chan traceRow, error) {
	if t.f.kind == "oom" {
		return t.openOOM(ctx)
	}
	if t.off {
		return nil, fmt.Errorf("%s events need eBPF (--mode off leaves no source)", t.f.kind)
	}
	var tr tracerRows
	var err error
	switch t.f.kind {
	case "reclaim":
		tr, err = pumpTracer(ctx, t.opts, bpf.OpenReclaimTracer, func(ev bpf.ReclaimStall) (traceRow, bool) {
			cg := t.env.CgroupOf(ctx, ev.Known, bpf.FieldMemcgV1ID, bpf.FieldCgroupID, ev.MemcgV1ID, ev.CgroupID)
			return traceRow{Kind: "reclaim", Time: ev.Time, Pid: ev.Pid, Comm: ev.Comm, Cgroup: cg, Pod: t.resolve(ctx, cg), Event: ev,
				Detail: fmt.Sprintf("stall=%v reclaimed=%d order=%d", ev.Duration, ev.NrReclaimed, ev.Order)}, ev.Duration >= t.f.minDuration
		})
	case "exit":
		tr, err = pumpTracer(ctx, t.opts, bpf.OpenExitTracer, func(ev bpf.ProcessExit) (traceRow, bool) {
			cg := t.env.CgroupOf(ctx, ev.Known, bpf.FieldMemcgV1ID, bpf.FieldCgroupID, ev.MemcgV1ID, ev.CgroupID)
			return traceRow{Kind: "exit", Time: ev.Time, Pid: ev.Tgid, Comm: ev.Comm, Cgroup: cg, Pod: t.resolve(ctx, cg), Event: ev,
				Detail: fmt.Sprintf("code=%d signal=%d maxrss=%d", ev.ExitCode, ev.Signal, ev.MaxRSSBytes)}, true
		})
	case "cgroup":
		tr, err = pumpTracer(ctx, t.opts, bpf.OpenCgroupTracer, func(ev bpf.CgroupEvent) (traceRow, bool) {
			return traceRow{Kind: "cgroup", Time: ev.Time, Pid: ev.Pid, Comm: ev.Comm, Cgroup: ev.Path, Pod: t.resolve(ctx, ev.Path), Event: ev,
				Detail: fmt.Sprintf("%s hierarchy=%d id=%d", ev.Op, ev.HierarchyID, ev.ID)}, true
		})
	}
	if err != nil {
		return nil, fmt.Errorf("needs %s: %w", traceNeeds[t.f.kind], err)
	}
	t.closers = append(t.closers, func() { _ = tr.close() })
	t.via = "eBPF " + tr.mode.String()
	return tr.rows, nil
}

// tracerRows is an open eBPF tracer turned into rows.
type tracerRows struct {
	rows  <-chan traceRow
	mode  bpf.AttachMode
	close func() error
}

// pumpTracer opens a tracer of events E and turns its events into rows
// (row's false drops one).
func pumpTracer[E any](ctx context.Context, opts bpf.Options, open func(context.Context, bpf.Options) (*bpf.Tracer[E], error),
	row func(E) (traceRow, bool)) (tracerRows, error) {
	tr, err := open(ctx, opts)
	if err != nil {
		return tracerRows{}, err
	}
	return tracerRows{rows: kevents.Pump(ctx, tr.Events(), row), mode: tr.Mode(), close: tr.Close}, nil
}

// openOOM opens the merged OOM kill stream: eBPF, or the fallbacks with
// --mode off or where eBPF does not work.
func (t *tracer) openOOM(ctx context.Context) (<-chan traceRow, error) {
	o := kevents.OOMOptions{Resolver: t.resolver}
	if t.f.cgroupPrefix != "" {
		o.MemoryEventsRoots = []string{t.f.cgroupPrefix}
		o.OOMControlCgroups = []string{t.f.cgroupPrefix}
	}
	s, err := t.env.OpenOOM(ctx, o)
	if err != nil {
		return nil, err
	}
	if s.Fallback() {
		why := s.Why()
		if s.Forced {
			why = "--mode off"
		}
		fmt.Fprintf(t.stderr, "kernelet trace oom: %s; using fallback: %s\n", why, s.Active())
		for _, n := range s.Notes() {
			fmt.Fprintf(t.stderr, "kernelet trace oom: not used: %s\n", n)
		}
	}
	t.closers = append(t.closers, func() { _ = s.Close() })
	t.via = s.Via()
	return kevents.Pump(ctx, s.Kills(), func(k oom.Kill) (traceRow, bool) {
		detail := fmt.Sprintf("sources=%s global=%v", k.Sources, k.Global)
		if k.Known.Has(oom.FieldRSS) {
			detail += fmt.Sprintf(" anon_rss=%d", k.AnonRSSBytes)
		}
		if k.OOMMemcg != "" {
			detail += " oom_memcg=" + k.OOMMemcg
		}
		return traceRow{Kind: "oom", Time: k.Time, Pid: k.Pid, Comm: k.Comm, Cgroup: k.CgroupPath(), Pod: k.Pod, Event: k, Detail: detail}, true
	}), nil
}
