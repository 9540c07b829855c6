package oom

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// source is one place the kernel reports OOM kills (one file each:
// source_bpf_linux.go, source_memoryevents_linux.go,
// source_oomcontrol_linux.go, source_kmsg_linux.go).
type source interface {
	// run reports the kills the source sees to send until the source is
	// closed (or its context ends).
	run(send sendFunc)
	// Close releases the source's kernel handles; run then returns.
	Close() error
}

// sendFunc hands one report and when it reached Go to the merger.
type sendFunc func(k Kill, arrived time.Time)

// opener opens one kind of source. Its error says why the kind is not
// available, or, with a source, what part of it is not (either becomes one
// of Stream.Notes, prefixed with note).
type opener struct {
	kind Sources
	// note prefixes the error in Stream.Notes ("" for none).
	note string
	open func(ctx context.Context, cfg *StreamConfig) (source, error)
}

// openers are the kinds of source, best first.
var openers = []opener{
	{SourceBPF, "", openBPFSource},
	{SourceMemoryEvents, "memory.events: ", openMemoryEventsSource},
	{SourceOOMControl, "oom_control: ", openOOMControlSource},
	{SourceKmsg, "kmsg: ", openKmsgSource},
}

// runEach runs watch for each of ws in a goroutine of its own and returns
// when all have returned.
func runEach[W any](ws []W, watch func(W)) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { watch(w) })
	}
	wg.Wait()
}

// closeEach closes the watcher of each of ws and joins the errors.
func closeEach[W any](ws []W, watcher func(W) io.Closer) error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, watcher(w).Close())
	}
	return errors.Join(errs...)
}
