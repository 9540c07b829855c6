package pleg

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime"
)

// stream follows the runtime's container events until ctx is done: it
// opens the stream, hands each event on (handleEvent), and when the stream
// breaks relists at the short period and opens it again with back-off.
// Unimplemented (containerd 1.6) ends it: relist alone remains.
func (p *PLEG) stream(ctx context.Context) {
	log := klog.FromContext(ctx)
	// The CRI client logs the end of a stream at error level; the outcome
	// is said here, once per change.
	quiet := klog.NewContext(ctx, quietErrors(log, 4))
	backoff := streamRetryMin
	for {
		opened, announced, err := p.streamOnce(ctx, quiet)
		if ctx.Err() != nil {
			return
		}
		p.m.connErrors.Inc()
		p.setStreaming(false)
		p.requestRelist() // what the stream missed
		if status.Code(err) == codes.Unimplemented {
			log.Info("Runtime does not implement GetContainerEvents; using relist alone", "period", p.cfg.Period)
			return
		}
		if opened {
			backoff = streamRetryMin
			if announced {
				log.Info("Container event stream broke; relisting every period until it is back", "err", err, "period", p.cfg.Period)
			} else {
				log.V(2).Info("Container event stream broke", "err", err)
			}
		} else {
			log.V(2).Info("Container event stream could not be opened", "err", err, "retryIn", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(backoff):
		}
		backoff = min(2*backoff, streamRetryMax)
	}
}

// streamOnce opens the stream and handles its events until it ends;
// opened tells whether the runtime accepted it, announced whether it
// lasted streamSettle and was logged as driving the PLEG (a runtime
// without events, containerd 1.6, accepts the stream and fails its first
// receive at once: no such line for it).
func (p *PLEG) streamOnce(ctx, quiet context.Context) (opened, announced bool, err error) {
	ch := make(chan *runtimeapi.ContainerEventResponse, p.cfg.EventBuffer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			p.handleEvent(ctx, ev)
		}
	}()
	ended := make(chan struct{})
	var logged chan bool // what the announcer did, once the stream ended
	err = p.cfg.Streamer.GetContainerEvents(quiet, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
		opened = true
		p.m.connSuccess.Inc()
		p.setStreaming(true)
		p.requestRelist() // what happened before the stream opened
		if p.cfg.Evented {
			logged = make(chan bool, 1)
			go func() {
				select {
				case <-p.clock.After(streamSettle):
					klog.FromContext(ctx).Info("Container event stream open; events drive the PLEG", "safetyRelistPeriod", p.cfg.SafetyPeriod)
					logged <- true
				case <-ended:
					logged <- false
				}
			}()
		}
	})
	close(ch) // the client sends only from within the call
	<-done
	close(ended)
	if logged != nil {
		announced = <-logged
	}
	return opened, announced, err
}

func (p *PLEG) setStreaming(on bool) {
	p.mu.Lock()
	p.streaming = on
	p.mu.Unlock()
	v := 0.0
	if on && p.cfg.Evented {
		v = 1
	}
	p.m.eventsActive.Set(v)
}

// handleEvent applies one runtime event: with Evented, the pod's status
// becomes what the event says of its sandbox and the changes are emitted
// at once; otherwise, when the event cannot be read, or when the pod was
// read after the event (events that arrive out of order: what an older
// one says of another sandbox of the pod would be lost), it wakes a
// relist.
func (p *PLEG) handleEvent(ctx context.Context, ev *runtimeapi.ContainerEventResponse) {
	if ev.GetCreatedAt() > 0 {
		p.m.eventLatency.Observe(time.Since(time.Unix(0, ev.GetCreatedAt())).Seconds())
	}
	if !p.cfg.Evented {
		p.requestRelist()
		return
	}
	se, ok := runtime.SandboxEventFromCRI(ctx, ev)
	if !ok {
		if ev.GetPodSandboxStatus() == nil { // gone before the runtime read it
			p.requestRelist()
		}
		return
	}
	p.mu.Lock()
	if k, had := p.known[se.UID]; had && k.status == nil && !se.At.After(k.at) {
		p.mu.Unlock()
		return // from before its worker removed and forgot the pod (Forget): nothing to learn
	}
	evs, stale := p.applyLocked(se.UID, se.Apply(p.known[se.UID].status), se.At)
	p.mu.Unlock()
	if stale {
		p.requestRelist()
		return
	}
	if log := klog.FromContext(ctx).V(3); log.Enabled() {
		for _, e := range evs {
			log.Info("Pod lifecycle event from a runtime event", "podUID", e.UID, "event", e.Type, "id", e.Data,
				"runtimeEvent", ev.GetContainerEventType().String())
		}
	}
	p.emit(ctx, evs)
}
