package podworkers

import (
	"testing"
	"time"
)

// The retry delays of a failed sync, stop or kill: 1 s doubling to 10 s
// (the defaults), each with up to half of it added as jitter.
func TestRetryDelays(t *testing.T) {
	ws, err := New(Config{Syncer: newFake()})
	if err != nil {
		t.Fatal(err)
	}
	base := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}
	for range 20 { // jitter is random: try it often
		r := ws.retry()
		for i, d := range base {
			if got := r.Step(); got < d || got > d+d/2 {
				t.Fatalf("retry %d: %v, want in [%v, %v]", i+1, got, d, d+d/2)
			}
		}
	}
}
