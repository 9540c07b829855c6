package oom

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kernelet/kernelet/cgroups"
)

// OpenStream opens the OOM kill sources cfg asks for and merges them into
// one stream of Kills, until ctx ends or Close.
func OpenStream(ctx context.Context, cfg StreamConfig) (*Stream, error) {
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("oom stream: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{kills: make(chan Kill, 64)}
	var opened []source
	for _, o := range openers {
		if !s.wants(cfg.Sources, o.kind) {
			continue
		}
		src, err := o.open(ctx, &cfg)
		if err != nil {
			s.notes = append(s.notes, o.note+err.Error())
		}
		if src == nil {
			continue
		}
		s.active |= o.kind
		if b, ok := src.(*bpfSource); ok {
			s.mode = b.tr.Mode()
			s.stats = b.tr
		}
		opened = append(opened, src)
	}
	stop := func() error {
		cancel()
		var errs []error
		for _, src := range opened {
			errs = append(errs, src.Close())
		}
		return errors.Join(errs...)
	}
	if s.active == 0 {
		err := stop()
		return nil, errors.Join(fmt.Errorf("%w: %s", ErrNoSource, strings.Join(s.notes, "; ")), err)
	}
	in := make(chan Kill, 64)
	send := func(k Kill, arrived time.Time) {
		if cfg.Raw != nil {
			cfg.Raw(k, arrived)
		}
		select {
		case in <- k:
		case <-ctx.Done():
		}
	}
	var wg sync.WaitGroup
	for _, src := range opened {
		wg.Go(func() { src.run(send) })
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.kills)
		mergeLoop(ctx, cfg, s.active&cfg.Complete, in, s.kills)
	}()
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() {
			stopErr = stop()
			wg.Wait()
			<-done
		})
		return stopErr
	}
	context.AfterFunc(ctx, func() { _ = s.stop() })
	return s, nil
}

// defaults fills what cfg leaves out.
func (cfg *StreamConfig) defaults() error {
	if cfg.Hierarchies == nil {
		h, err := cgroups.Discover()
		if err != nil {
			return err
		}
		cfg.Hierarchies = h
	}
	if cfg.Paths == nil {
		if r, err := cgroups.NewReader(cfg.Hierarchies); err == nil {
			cfg.Paths = cgroups.NewPathCache(r)
		} else {
			cfg.Paths = cgroups.NewPathCache(nil)
		}
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.KmsgPath == "" {
		cfg.KmsgPath = DefaultKmsgPath
	}
	if len(cfg.MemoryEventsRoots) == 0 {
		cfg.MemoryEventsRoots = []string{"/"}
	}
	return nil
}

// wants says whether the stream opens kind: the ones asked for, or with
// none asked for the eBPF source and only when it did not open the
// fallbacks.
func (s *Stream) wants(asked, kind Sources) bool {
	if asked != 0 {
		return asked&kind != 0
	}
	if kind == SourceBPF {
		return true
	}
	return s.active&SourceBPF == 0
}

// mergeLoop merges reports from in and emits each kill once its window
// ends, or at once when every source of complete reported it, resolving
// its pod first.
func mergeLoop(ctx context.Context, cfg StreamConfig, complete Sources, in <-chan Kill, out chan<- Kill) {
	m := &Merger{Window: cfg.Window, Complete: complete, Repeat: DefaultRepeat}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if next := m.Next(); !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case k := <-in:
			m.Add(time.Now(), k)
		case <-timer.C:
		}
		for _, k := range m.Flush(time.Now()) {
			if cfg.Resolver != nil && k.Pod == nil {
				if cg := k.CgroupPath(); cg != "" {
					if ref, ok := cfg.Resolver.Resolve(ctx, cg); ok {
						k.Pod = &ref
					}
				}
			}
			select {
			case out <- k:
			case <-ctx.Done():
				return
			}
		}
	}
}
