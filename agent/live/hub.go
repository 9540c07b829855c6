package live

import (
	"sync"

	"k8s.io/utils/clock"
)

// Defaults of a Hub.
const (
	// DefaultRecent is how many events a Hub keeps for late subscribers.
	DefaultRecent = 200
	// DefaultBuffer is a subscriber's buffer when Subscribe gets 0.
	DefaultBuffer = 64
)

// Hub broadcasts events to subscribers. Publish never blocks: each
// subscriber has a bounded buffer, and one whose buffer is full is
// dropped (its channel closed, Dropped true), never waited for. The last
// events are kept for subscribers that come later. A nil *Hub ignores
// everything, so publishers need no check.
type Hub struct {
	clock clock.PassiveClock

	mu     sync.Mutex
	seq    uint64
	recent []Event // ring of the last cap(recent) events
	next   int     // where the next event goes in recent once it is full
	subs   map[*Subscription]struct{}
}

// NewHub returns a hub keeping the last keep events (0: DefaultRecent),
// stamping events with clk's time (nil: the real clock).
func NewHub(keep int, clk clock.PassiveClock) *Hub {
	if keep <= 0 {
		keep = DefaultRecent
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Hub{clock: clk, recent: make([]Event, 0, keep), subs: map[*Subscription]struct{}{}}
}

// Subscription receives a hub's events from the moment it subscribed.
type Subscription struct {
	h       *Hub
	ch      chan Event
	dropped bool // under h.mu
	closed  bool // under h.mu
}

// Events delivers the events in publication order; it is closed when the
// subscriber was dropped or closed.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Dropped reports whether the hub dropped the subscriber because its
// buffer was full.
func (s *Subscription) Dropped() bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.dropped
}

// Close ends the subscription; Events is closed.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.remove(s)
}

// remove closes s once; h.mu is held.
func (h *Hub) remove(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	delete(h.subs, s)
	close(s.ch)
}

// Subscribe returns the recent events (oldest first) and a subscription
// to every event published after them, with a buffer of buf events (0:
// DefaultBuffer); nothing is missed or seen twice between the two.
func (h *Hub) Subscribe(buf int) ([]Event, *Subscription) {
	if buf <= 0 {
		buf = DefaultBuffer
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Subscription{h: h, ch: make(chan Event, buf)}
	h.subs[s] = struct{}{}
	return h.recentLocked(), s
}

// Recent returns the kept events, oldest first.
func (h *Hub) Recent() []Event {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recentLocked()
}

func (h *Hub) recentLocked() []Event {
	out := make([]Event, 0, len(h.recent))
	out = append(out, h.recent[h.next:]...)
	return append(out, h.recent[:h.next]...)
}

// Publish numbers e, stamps it with the hub's time when it has none,
// keeps it and hands it to every subscriber, dropping those whose buffer
// is full. It never blocks on a subscriber.
func (h *Hub) Publish(e Event) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e.Seq = h.seq
	if e.Time.IsZero() {
		e.Time = h.clock.Now()
	}
	if len(h.recent) < cap(h.recent) {
		h.recent = append(h.recent, e)
	} else {
		h.recent[h.next] = e
		h.next = (h.next + 1) % cap(h.recent)
	}
	for s := range h.subs {
		select {
		case s.ch <- e:
		default:
			s.dropped = true
			h.remove(s)
		}
	}
}

// Subscribers is how many subscriptions are open.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
