package kevents

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kernelet/kernelet/oom"
)

// OOM is an open OOM kill stream and how it was chosen.
type OOM struct {
	*oom.Stream
	// BPFErr is why the eBPF source did not open (nil when it did, or
	// when eBPF was forced off).
	BPFErr error
	// Forced: eBPF was forced off.
	Forced bool
}

// Fallback says whether the stream runs on the fallback sources.
func (o *OOM) Fallback() bool { return o.Active()&oom.SourceBPF == 0 }

// Via is what the kills come from, e.g. "bpf (eBPF tp_btf)" or
// "memory.events+kmsg".
func (o *OOM) Via() string {
	via := o.Active().String()
	if o.Active()&oom.SourceBPF != 0 {
		via += " (eBPF " + o.BPFMode().String() + ")"
	}
	return via
}

// Why is why the fallbacks are in use ("" when eBPF is).
func (o *OOM) Why() string {
	switch {
	case !o.Fallback():
		return ""
	case o.Forced:
		return "eBPF forced off"
	case o.BPFErr != nil:
		return fmt.Sprintf("eBPF unavailable: %v", o.BPFErr)
	}
	return "eBPF unavailable"
}

// OpenOOM opens the OOM kill stream: the eBPF source (with kmsg when
// asked), and where eBPF is forced off or does not work the fallbacks
// (memory.events, oom_control, kmsg), each with the oom package's
// defaults.
func (e *Env) OpenOOM(ctx context.Context, o OOMOptions) (*OOM, error) {
	cfg := oom.StreamConfig{BPF: e.opts.BPF, Hierarchies: e.Hierarchies, Paths: e.Paths, Resolver: o.Resolver,
		MemoryEventsRoots: o.MemoryEventsRoots, OOMControlCgroups: o.OOMControlCgroups, Raw: o.Raw, Window: o.Window}
	out := &OOM{Forced: e.opts.BPFOff}
	if !e.opts.BPFOff {
		cfg.Sources = oom.SourceBPF
		cfg.Complete = oom.SourceBPF
		if o.WithKmsg {
			cfg.Sources |= oom.SourceKmsg
			cfg.Complete |= oom.SourceKmsg
		}
		s, err := oom.OpenStream(ctx, cfg)
		switch {
		case err == nil && s.Active()&oom.SourceBPF != 0:
			out.Stream = s
			e.addTracer(s)
			return out, nil
		case err == nil:
			out.BPFErr = errors.New(strings.Join(s.Notes(), "; "))
			_ = s.Close()
		default:
			out.BPFErr = err
		}
	}
	cfg.Sources = oom.SourceMemoryEvents | oom.SourceOOMControl | oom.SourceKmsg
	cfg.Complete = 0
	if o.WithKmsg {
		cfg.Complete = oom.SourceKmsg
	}
	s, err := oom.OpenStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("no OOM source works: %w", errors.Join(out.BPFErr, err))
	}
	out.Stream = s
	return out, nil
}
