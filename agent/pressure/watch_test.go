package pressure

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Every event of a watch wakes the manager, from the one goroutine that
// reads the watch; it ends when the watch's events end.
func TestWakeOn(t *testing.T) {
	events := make(chan struct{ n int })
	var wakes atomic.Int32
	var wg sync.WaitGroup
	wakeOn(&wg, events, func() { wakes.Add(1) })
	for i := range 3 {
		events <- struct{ n int }{i}
	}
	close(events)
	wg.Wait()
	if n := wakes.Load(); n != 3 {
		t.Errorf("%d wake-ups for 3 events, want 3", n)
	}
}
