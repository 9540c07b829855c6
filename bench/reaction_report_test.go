package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The "evicting pod" line of kernelet's log gives the run its wake, read,
// decision and hand-off; a line of another pod is skipped.
func TestReadEvictionLine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "agent.log")
	lines := `I1130 07:50:01.000100   4242 reclaim.go:199] "Eviction manager: evicting pod" pod="ns/other" podUID="u0" signal="allocatableMemory.available" usage=1 remaining=1 trigger="tick" woke="" read="2026-11-30T07:50:00.9Z" decided="2026-11-30T07:50:00.95Z" handedOff="2026-11-30T07:50:01Z"
I1130 07:50:02.000100   4242 reclaim.go:199] "Eviction manager: evicting pod" pod="ns/p-1" podUID="u1" signal="allocatableMemory.available" usage=471859200 remaining=104857600 trigger="memcg_threshold" woke="2026-11-30T07:50:01.000000001Z" read="2026-11-30T07:50:01.0021Z" decided="2026-11-30T07:50:01.0023Z" handedOff="2026-11-30T07:50:01.0031Z"
`
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var r reactionRun
	if err := readEvictionLine(log, "ns/p-1", &r); err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if r.trigger != "memcg_threshold" || !r.woke.Equal(at("2026-11-30T07:50:01.000000001Z")) || !r.read.Equal(at("2026-11-30T07:50:01.0021Z")) ||
		!r.decided.Equal(at("2026-11-30T07:50:01.0023Z")) || !r.handedOff.Equal(at("2026-11-30T07:50:01.0031Z")) {
		t.Fatalf("read %+v", r)
	}
	var tick reactionRun
	if err := readEvictionLine(log, "ns/other", &tick); err != nil || !tick.woke.IsZero() || tick.trigger != "tick" {
		t.Fatalf("a tick's line: %+v, %v", tick, err)
	}
	if err := readEvictionLine(log, "ns/missing", &reactionRun{}); err == nil {
		t.Fatal("no line for a pod kernelet did not evict is not an error")
	}
}

// The table counts runs without a kernel OOM kill, the budget from the
// measured rate, and each step from the crossing.
func TestReactionTable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	cells := []reactionCell{{load: "busy", rate: 500, runs: []reactionRun{
		{crossed: t0, woke: ms(0.5), read: ms(2), decided: ms(3), handedOff: ms(4), stopRecv: ms(10), exited: ms(40), stopDone: ms(60), rate: 500, trigger: "memcg_threshold"},
		{crossed: t0, read: ms(50), decided: ms(51), handedOff: ms(52), stopRecv: ms(70), exited: ms(250), stopDone: ms(300), oom: ms(200), rate: 400, trigger: "tick"},
	}}}
	got := reactionTable(cells)
	for _, want := range []string{
		"| busy | prompt | 500 | 500 | 200 ms | 1/2 | memcg_threshold×1, tick×1 |",
		" 0.5 / 0.5 / 0.5 |", // the wake: one run had none
		" 2.0 / 50.0 / 50.0 |",
		" 40.0 / 250.0 / 250.0 | 60.0 / 300.0 / 300.0 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
