package live

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func cond(t string) Event { return ConditionEvent(ConditionChange{Type: t, Status: "True"}) }

func TestHubOrderAndStamp(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h := NewHub(10, clk)
	_, s := h.Subscribe(10)
	for _, n := range []string{"a", "b", "c"} {
		h.Publish(cond(n))
	}
	for i, want := range []string{"a", "b", "c"} {
		e := <-s.Events()
		if e.Seq != uint64(i+1) || e.Condition.Type != want || !e.Time.Equal(clk.Now()) {
			t.Fatalf("event %d = seq %d %q at %v, want seq %d %q at %v", i, e.Seq, e.Condition.Type, e.Time, i+1, want, clk.Now())
		}
	}
	given := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	e := cond("d")
	e.Time = given
	h.Publish(e)
	if got := <-s.Events(); !got.Time.Equal(given) {
		t.Errorf("an event's own time was replaced: %v", got.Time)
	}
}

func TestHubSlowSubscriberDroppedNotBlocking(t *testing.T) {
	h := NewHub(5, nil)
	_, slow := h.Subscribe(2)
	_, fast := h.Subscribe(100)
	// Publish returns although nobody reads slow: its buffer holds 2.
	for range 10 {
		h.Publish(cond("x"))
	}
	if !slow.Dropped() {
		t.Fatal("the slow subscriber was not dropped")
	}
	n := 0
	for range slow.Events() { // buffered events, then closed
		n++
	}
	if n != 2 {
		t.Errorf("slow subscriber got %d events before being dropped, want its buffer's 2", n)
	}
	if fast.Dropped() || len(fast.Events()) != 10 {
		t.Errorf("fast subscriber: dropped %v, %d events buffered, want 10", fast.Dropped(), len(fast.Events()))
	}
	if h.Subscribers() != 1 {
		t.Errorf("subscribers = %d, want 1", h.Subscribers())
	}
	fast.Close()
	fast.Close() // twice is fine
	if h.Subscribers() != 0 {
		t.Errorf("subscribers after close = %d", h.Subscribers())
	}
}

func TestHubRecentRing(t *testing.T) {
	h := NewHub(3, nil)
	for _, n := range []string{"a", "b"} {
		h.Publish(cond(n))
	}
	if got := types(h.Recent()); got != "ab" {
		t.Fatalf("recent = %q, want ab", got)
	}
	for _, n := range []string{"c", "d", "e"} {
		h.Publish(cond(n))
	}
	recent, s := h.Subscribe(1)
	if got := types(recent); got != "cde" {
		t.Fatalf("recent for a late subscriber = %q, want the last 3, cde", got)
	}
	h.Publish(cond("f"))
	if e := <-s.Events(); e.Condition.Type != "f" || e.Seq != 6 {
		t.Errorf("after the backlog: %q seq %d, want f seq 6", e.Condition.Type, e.Seq)
	}
}

func TestNilHub(t *testing.T) {
	var h *Hub
	h.Publish(cond("a")) // no panic
	if h.Recent() != nil {
		t.Error("nil hub has recent events")
	}
}

func types(es []Event) string {
	s := ""
	for _, e := range es {
		s += e.Condition.Type
	}
	return s
}
