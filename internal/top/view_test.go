package top

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kernelet/kernelet/agent/live"
)

func pods() []live.Pod {
	mk := func(name string, ws int64, psi float64, ooms int) live.Pod {
		return live.Pod{PodRef: live.PodRef{Namespace: "default", Name: name}, QoS: "Burstable", WorkingSetBytes: ws,
			RequestBytes: 64 << 20, LimitBytes: 128 << 20, PSI: &live.PSI{SomeAvg10: psi}, OOMKills: ooms}
	}
	return []live.Pod{mk("a", 10<<20, 5, 0), mk("b", 90<<20, 0, 1), mk("c", 50<<20, 9, 3)}
}

func names(ps []live.Pod) string {
	var s string
	for _, p := range ps {
		s += p.Name
	}
	return s
}

func TestSortPods(t *testing.T) {
	for key, want := range map[SortKey]string{SortMemory: "bca", SortPSI: "cab", SortOOM: "cba", SortName: "abc"} {
		if got := names(SortPods(pods(), key)); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

func TestViewFits80x24(t *testing.T) {
	var many []live.Pod
	for i := range 40 {
		p := pods()[i%3]
		p.Name = fmt.Sprintf("a-rather-long-pod-name-that-does-not-fit-%02d", i)
		many = append(many, p)
	}
	s := &live.Snapshot{NodeName: "node-1", Node: live.Memory{CapacityBytes: 24 << 30, AvailableBytes: 20 << 30},
		Allocatable: &live.Memory{CapacityBytes: 1 << 30, AvailableBytes: 512 << 20},
		Thresholds:  []live.Threshold{{Signal: "memory.available", Value: "100Mi", QuantityBytes: 100 << 20}, {Signal: "allocatableMemory.available", Value: "100Mi", Met: true}},
		Conditions:  []string{"MemoryPressure"}, NodePSI: &live.PSI{SomeAvg10: 1.25}, Pods: many}
	st := State{Source: "unix:///x", Snapshot: s}
	for i := range 10 {
		st.Apply(Update{Event: &live.Event{Time: time.Unix(int64(i), 0), Kind: live.KindOOMKill,
			OOMKill: &live.OOMKill{Pod: &live.PodRef{Namespace: "default", Name: "p"}, Container: "c", PID: 42, Comm: "testbox"}}})
	}
	out := View(st)
	lines := strings.Split(out, "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines, want 24:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d cells: %q", n, l)
		}
		if strings.HasPrefix(l, "NAMESPACE/POD") || strings.HasPrefix(l, "default/") {
			if !strings.HasSuffix(l, "OOM") && !strings.HasSuffix(strings.TrimRight(l, "0123456789"), " ") {
				t.Errorf("table row cut before its OOM column: %q", l)
			}
		}
	}
	for _, want := range []string{"PRESSURE: MemoryPressure", "allocatableMemory.available<100Mi MET", "more pods", "OOMKill default/p container c pid 42 (testbox)", "keys: m memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("view lacks %q:\n%s", want, out)
		}
	}
}

func TestViewWaitingAndError(t *testing.T) {
	st := State{Source: "http://x"}
	if out := View(st); !strings.Contains(out, "waiting for http://x") {
		t.Errorf("no waiting line:\n%s", out)
	}
	st.Apply(Update{Err: fmt.Errorf("connection refused")})
	if out := View(st); !strings.Contains(out, "connection refused") {
		t.Errorf("no error line:\n%s", out)
	}
}
