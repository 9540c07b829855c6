//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

const (
	defaultRingBufferBytes = 256 << 10
	defaultChannelSize     = 256
)

// progRef is one program of a family to load and attach in a mode.
type progRef struct {
	name  string // the ELF program (C function), e.g. "kl_oom_btf"
	label string // what it does, the metric label, e.g. "oom_mark_victim"
	// hook is the tracepoint: its name for tp_btf and raw_tp
	// ("mark_victim"), "group/name" for tracepoint ("oom/mark_victim").
	hook string
}

// plan is what a family loads in one attach mode.
type plan struct {
	progs []progRef
	// setup writes the constants of the spec (optional).
	setup func(spec *ebpf.CollectionSpec) error
}

// btfOrRaw is the suffix of a family's program for ModeTpBTF ("btf") or
// ModeRawTP ("raw").
func btfOrRaw(mode AttachMode) string {
	if mode == ModeRawTP {
		return "raw"
	}
	return "btf"
}

// attachEnv is what the family's planner may look at.
type attachEnv struct {
	mode    AttachMode
	opts    Options
	kernel  *btf.Spec // ModeTpBTF, ModeRawTP
	tracefs string    // ModeTracepoint
}

// family is one program family (one C file, one generated object).
type family struct {
	name   string // "oom", for errors and logs
	spec   func() (*ebpf.CollectionSpec, error)
	events string // the ring buffer map
	drops  string // the drop counter map
	// progs are the family's programs, the same in every mode; setup
	// (optional) returns what writes the spec's constants in env's mode,
	// given the formats of the progs' tracepoints in ModeTracepoint.
	progs []progSpec
	setup func(env *attachEnv, formats []tpFormat) (func(*ebpf.CollectionSpec) error, error)
	// plan, when set, plans the family instead of progs and setup.
	plan func(env *attachEnv) (plan, error)
}

// progSpec is a program of a family: the ELF programs base+"_btf",
// base+"_raw" and base+"_tp", one for each attach mode, all on the
// tracepoint "group/name".
type progSpec struct {
	base, label, tracepoint string
}

// ref is the program of p to load and attach in mode.
func (p progSpec) ref(mode AttachMode) progRef {
	if mode == ModeTracepoint {
		return progRef{name: p.base + "_tp", label: p.label, hook: p.tracepoint}
	}
	_, name, _ := strings.Cut(p.tracepoint, "/")
	return progRef{name: p.base + "_" + btfOrRaw(mode), label: p.label, hook: name}
}

// planFor is what fam loads in env's mode.
func (fam *family) planFor(env *attachEnv) (plan, error) {
	if fam.plan != nil {
		return fam.plan(env)
	}
	switch env.mode {
	case ModeTpBTF, ModeRawTP, ModeTracepoint:
	default:
		return plan{}, fmt.Errorf("unknown attach mode %v", env.mode)
	}
	var p plan
	var formats []tpFormat
	for _, ps := range fam.progs {
		p.progs = append(p.progs, ps.ref(env.mode))
		if env.mode == ModeTracepoint {
			group, name, _ := strings.Cut(ps.tracepoint, "/")
			f, err := readTracepointFormat(env.tracefs, group, name)
			if err != nil {
				return plan{}, err
			}
			formats = append(formats, f)
		}
	}
	if fam.setup != nil {
		setup, err := fam.setup(env, formats)
		if err != nil {
			return plan{}, err
		}
		p.setup = setup
	}
	return p, nil
}

// stream is an open tracer of events E.
type stream[E any] struct {
	mode    AttachMode
	events  chan E
	coll    *ebpf.Collection
	progs   []progRef
	links   []io.Closer
	reader  *ringbuf.Reader
	drops   *ebpf.Map
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	err     error
	// mu guards coll and drops against release while stats are read.
	mu sync.Mutex
}

var memlockOnce = sync.OnceValue(func() error {
	// A no-op on kernels that account BPF memory to the memcg (5.11+).
	return rlimit.RemoveMemlock()
})

// openTracer loads and attaches fam in the best mode that works (or the
// one opts.Mode forces) and starts decoding its ring buffer into the
// events channel.
func openTracer[E any](ctx context.Context, fam *family, opts Options, decode func([]byte, AttachMode, wallClock) (E, error)) (*Tracer[E], error) {
	logger := klog.FromContext(ctx)
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("bpf: %s: %w", fam.name, err)
	}
	if err := memlockOnce(); err != nil {
		return nil, fmt.Errorf("%w: %s: remove the memlock rlimit: %w", ErrUnavailable, fam.name, err)
	}
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return nil, fmt.Errorf("%w: %s: ring buffer maps (Linux 5.8+): %w", ErrUnavailable, fam.name, err)
	}
	modes := []AttachMode{ModeTpBTF, ModeRawTP, ModeTracepoint}
	if opts.Mode != ModeAuto {
		modes = []AttachMode{opts.Mode}
	}
	var errs []error
	for _, mode := range modes {
		s, err := attach[E](fam, mode, opts)
		if err == nil {
			if len(errs) > 0 {
				logger.V(2).Info("bpf: fell back to a lower attach mode", "family", fam.name, "mode", mode, "reasons", modeErrors(errs).Error())
			}
			s.start(ctx, decode)
			return &Tracer[E]{s: s}, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, fam.name, modeErrors(errs))
}

func (o Options) validate() error {
	switch o.Mode {
	case ModeAuto, ModeTpBTF, ModeRawTP, ModeTracepoint:
	default:
		return fmt.Errorf("unknown attach mode %v", o.Mode)
	}
	if n := o.RingBufferBytes; n < 0 || n > 0 && (n&(n-1) != 0 || n%os.Getpagesize() != 0 || n > 1<<30) {
		return fmt.Errorf("ring buffer size %d: want a power of two, a multiple of the page size, at most 1 GiB", n)
	}
	if o.ChannelSize < 0 || o.MinStall < 0 {
		return errors.New("negative ChannelSize or MinStall")
	}
	if len(o.CgroupHierarchies) > 2 {
		return fmt.Errorf("cgroup hierarchies %v: at most two", o.CgroupHierarchies)
	}
	for _, h := range o.CgroupHierarchies {
		if h < 0 {
			return fmt.Errorf("cgroup hierarchy %d: not an id", h)
		}
	}
	return nil
}

// modeErrors are the reasons each mode failed, on one line.
type modeErrors []error

func (es modeErrors) Error() string {
	msgs := make([]string, len(es))
	for i, err := range es {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (es modeErrors) Unwrap() []error { return es }

// modeError names the mode in front of what failed.
type modeError struct {
	mode AttachMode
	err  error
}

func (e *modeError) Error() string { return e.mode.String() + ": " + e.err.Error() }
func (e *modeError) Unwrap() error { return e.err }

func attach[E any](fam *family, mode AttachMode, opts Options) (_ *stream[E], err error) {
	defer func() {
		if err != nil {
			err = &modeError{mode: mode, err: err}
		}
	}()
	env := &attachEnv{mode: mode, opts: opts}
	types := sharedKernelTypes.acquire()
	defer sharedKernelTypes.release(KernelTypesIdle)
	switch mode {
	case ModeTpBTF, ModeRawTP:
		if env.kernel, err = types.Kernel(); err != nil {
			return nil, fmt.Errorf("kernel BTF not found (/sys/kernel/btf/vmlinux): %w", err)
		}
		if mode == ModeRawTP {
			if err := features.HaveProgramType(ebpf.RawTracepoint); err != nil {
				return nil, fmt.Errorf("raw tracepoint programs (Linux 4.17+): %w", err)
			}
		}
	case ModeTracepoint:
		if err := features.HaveProgramType(ebpf.TracePoint); err != nil {
			return nil, fmt.Errorf("tracepoint programs: %w", err)
		}
		if env.tracefs, err = findTracefs(opts.Tracefs); err != nil {
			return nil, err
		}
	}
	p, err := fam.planFor(env)
	if err != nil {
		return nil, err
	}
	spec, err := fam.spec()
	if err != nil {
		return nil, fmt.Errorf("parse the embedded object: %w", err)
	}
	if err := configure(spec, fam, p, opts); err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: env.kernel},
		Cache:    types,
	})
	if err != nil {
		return nil, loadError(err)
	}
	s := &stream[E]{
		mode:    mode,
		coll:    coll,
		progs:   p.progs,
		drops:   coll.Maps[fam.drops],
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	ok := false
	defer func() {
		if !ok {
			_ = s.release()
		}
	}()
	for _, pr := range p.progs {
		l, err := attachProgram(mode, coll.Programs[pr.name], pr.hook, env.tracefs)
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", pr.hook, err)
		}
		s.links = append(s.links, l)
	}
	if s.reader, err = ringbuf.NewReader(coll.Maps[fam.events]); err != nil {
		return nil, fmt.Errorf("ring buffer reader: %w", err)
	}
	size := opts.ChannelSize
	if size <= 0 {
		size = defaultChannelSize
	}
	s.events = make(chan E, size)
	ok = true
	return s, nil
}

// configure writes the constants of spec and trims it to the programs of
// p and the maps (and variables) they use.
func configure(spec *ebpf.CollectionSpec, fam *family, p plan, opts Options) error {
	if v, ok := spec.Variables["page_shift"]; ok {
		if err := v.Set(uint32(bits.TrailingZeros(uint(os.Getpagesize())))); err != nil {
			return fmt.Errorf("set page_shift: %w", err)
		}
	}
	if n := opts.RingBufferBytes; n > 0 {
		if m := spec.Maps[fam.events]; m != nil {
			m.MaxEntries = uint32(n)
		}
	}
	if p.setup != nil {
		if err := p.setup(spec); err != nil {
			return err
		}
	}

	want := map[string]bool{}
	for _, pr := range p.progs {
		if spec.Programs[pr.name] == nil {
			return fmt.Errorf("program %s not in the object", pr.name)
		}
		want[pr.name] = true
	}
	used := map[string]bool{}
	for name, ps := range spec.Programs {
		if !want[name] {
			delete(spec.Programs, name)
			continue
		}
		for _, ins := range ps.Instructions {
			if ref := ins.Reference(); ref != "" {
				used[ref] = true
			}
		}
	}
	for name := range spec.Maps {
		if !used[name] {
			delete(spec.Maps, name)
		}
	}
	for name, v := range spec.Variables {
		if spec.Maps[v.SectionName] == nil {
			delete(spec.Variables, name)
		}
	}
	return nil
}

// loadError shortens a verifier error to its last lines.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		log := ve.Log
		if len(log) > 8 {
			log = log[len(log)-8:]
		}
		return fmt.Errorf("load: %w (verifier: %s)", err, strings.Join(log, " | "))
	}
	return fmt.Errorf("load: %w", err)
}

func attachProgram(mode AttachMode, prog *ebpf.Program, hook, tracefs string) (io.Closer, error) {
	if prog == nil {
		return nil, errors.New("program not loaded")
	}
	switch mode {
	case ModeTpBTF:
		return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	case ModeRawTP:
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: hook, Program: prog})
	case ModeTracepoint:
		group, name, _ := strings.Cut(hook, "/")
		return attachTracepoint(prog, tracefs, group, name)
	}
	return nil, fmt.Errorf("unknown attach mode %v", mode)
}

func (s *stream[E]) start(ctx context.Context, decode func([]byte, AttachMode, wallClock) (E, error)) {
	acquireStats(ctx)
	wall := newMonoToWall()
	logger := klog.FromContext(ctx)
	go func() {
		select {
		case <-ctx.Done():
			_ = s.close()
		case <-s.closing:
		}
	}()
	go func() {
		defer close(s.done)
		var rec ringbuf.Record
		decodeErrs := 0
		for {
			if err := s.reader.ReadInto(&rec); err != nil {
				if !errors.Is(err, ringbuf.ErrClosed) {
					logger.Error(err, "bpf: ring buffer read failed; the tracer closes")
					go s.close()
				}
				return
			}
			ev, err := decode(rec.RawSample, s.mode, wall)
			if err != nil {
				if decodeErrs++; decodeErrs <= 10 {
					logger.Error(err, "bpf: skipping an undecodable event")
				}
				continue
			}
			select {
			case s.events <- ev:
			case <-s.closing:
				return
			}
		}
	}()
}

// close stops the reader, detaches and unloads everything, and only then
// closes the events channel: once it is closed, nothing is left in the
// kernel.
func (s *stream[E]) close() error {
	s.once.Do(func() {
		close(s.closing)
		_ = s.reader.Close() // unblocks ReadInto
		<-s.done
		s.err = s.release()
		releaseStats()
		close(s.events)
	})
	return s.err
}

// release detaches and unloads everything (reader already closed or never
// started).
func (s *stream[E]) release() error {
	var errs []error
	for i := len(s.links) - 1; i >= 0; i-- {
		if err := s.links[i].Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach: %w", err))
		}
	}
	s.links = nil
	if s.reader != nil {
		if err := s.reader.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	if s.coll != nil {
		s.coll.Close()
		s.coll, s.drops = nil, nil
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

func (s *stream[E]) programStats() []ProgramStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.coll == nil {
		return nil
	}
	out := make([]ProgramStats, 0, len(s.progs))
	for _, pr := range s.progs {
		p := s.coll.Programs[pr.name]
		if p == nil {
			continue
		}
		st, err := p.Stats()
		if err != nil {
			continue
		}
		out = append(out, ProgramStats{Program: pr.label, RunCount: st.RunCount, RunTime: st.Runtime})
	}
	return out
}

func (s *stream[E]) dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drops == nil {
		return 0
	}
	var n uint64
	if err := s.drops.Lookup(uint32(0), &n); err != nil {
		return 0
	}
	return n
}

// BPF run-time statistics (kernel.bpf_stats_enabled) stay on while any
// tracer is open; the kernel counts runs only while they are.
var stats struct {
	sync.Mutex
	refs   int
	closer io.Closer
}

func acquireStats(ctx context.Context) {
	stats.Lock()
	defer stats.Unlock()
	stats.refs++
	if stats.refs > 1 || stats.closer != nil {
		return
	}
	c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		klog.FromContext(ctx).V(2).Info("bpf: run-time statistics not enabled; program stats stay zero unless kernel.bpf_stats_enabled=1", "err", err.Error())
		return
	}
	stats.closer = c
}

func releaseStats() {
	stats.Lock()
	defer stats.Unlock()
	stats.refs--
	if stats.refs == 0 && stats.closer != nil {
		_ = stats.closer.Close()
		stats.closer = nil
	}
}

// newMonoToWall returns a converter from CLOCK_MONOTONIC ns to wall-clock
// time, from the tightest of a few readings of both clocks.
func newMonoToWall() wallClock {
	var best, offset int64 = -1, 0
	for range 5 {
		var a, b unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		w := time.Now().UnixNano()
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		span := b.Nano() - a.Nano()
		if best < 0 || span < best {
			best, offset = span, w-(a.Nano()+span/2)
		}
	}
	return func(k uint64) time.Time { return time.Unix(0, int64(k)+offset) }
}

// monotonicNow is CLOCK_MONOTONIC, the clock of the events' Ktime.
func monotonicNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}
