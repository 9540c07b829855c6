package oom

import (
	"testing"
	"time"
)

func TestMerger(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	bpfK := Kill{Time: ms(1), Sources: SourceBPF, Known: FieldPid | FieldComm | FieldMemcgID | FieldCgroupID, Pid: 10, Comm: "x", MemcgID: 7, CgroupID: 8}
	ctl := Kill{Time: ms(0), Sources: SourceOOMControl, Known: FieldOOMMemcg, OOMMemcg: "/a", OOMMemcgID: 7}
	km := Kill{Time: ms(3), Sources: SourceKmsg, Known: FieldPid | FieldComm | FieldMemcg | FieldOOMMemcg | FieldGlobal, Pid: 10, Comm: "x", Memcg: "/a", OOMMemcg: "/a"}
	kmKilled := Kill{Time: ms(3), Sources: SourceKmsg, Known: FieldPid | FieldRSS, Pid: 10, AnonRSSBytes: 5}
	other := Kill{Time: ms(4), Sources: SourceKmsg, Known: FieldPid, Pid: 11}

	tests := map[string]struct {
		in   []Kill
		want []Kill
	}{
		"bpf alone": {in: []Kill{bpfK}, want: []Kill{bpfK}},
		"oom_control then bpf by memcg id, then kmsg by pid": {
			in: []Kill{ctl, bpfK, km, kmKilled, other},
			want: []Kill{{Time: ms(0), Sources: SourceBPF | SourceOOMControl | SourceKmsg,
				Known: FieldPid | FieldComm | FieldMemcgID | FieldCgroupID | FieldOOMMemcg | FieldMemcg | FieldGlobal | FieldRSS,
				Pid:   10, Comm: "x", MemcgID: 7, CgroupID: 8, OOMMemcg: "/a", OOMMemcgID: 7, Memcg: "/a", AnonRSSBytes: 5}, other},
		},
		"kmsg and oom_control by path": {
			in:   []Kill{km, {Sources: SourceOOMControl, Known: FieldOOMMemcg, OOMMemcg: "/a", Time: ms(2)}},
			want: []Kill{{Time: ms(2), Sources: SourceKmsg | SourceOOMControl, Known: km.Known, Pid: 10, Comm: "x", Memcg: "/a", OOMMemcg: "/a"}},
		},
		"different pids stay apart": {in: []Kill{km, other}, want: []Kill{km, other}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := &Merger{Window: 50 * time.Millisecond}
			for _, k := range tc.in {
				m.Add(t0, k)
			}
			if got := m.Flush(t0.Add(time.Millisecond)); len(got) != 0 {
				t.Fatalf("flushed before the window ended: %v", got)
			}
			if next := m.Next(); !next.Equal(t0.Add(50 * time.Millisecond)) {
				t.Errorf("Next = %v", next)
			}
			got := m.Flush(t0.Add(50 * time.Millisecond))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d kills %v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("kill %d =\n %+v\nwant\n %+v", i, got[i], tc.want[i])
				}
			}
			if len(m.Flush(time.Time{})) != 0 {
				t.Error("kills left after flush")
			}
		})
	}
}

func TestGrownLeaves(t *testing.T) {
	before := map[string]uint64{"/": 1, "/k": 1, "/k/a": 0, "/k/b": 1}
	now := map[string]uint64{"/": 2, "/k": 2, "/k/a": 1, "/k/b": 1}
	got := grownLeaves(before, now)
	if len(got) != 1 || got[0] != "/k/a" {
		t.Errorf("grownLeaves = %v, want [/k/a]", got)
	}
}

func TestSourcesString(t *testing.T) {
	if s := (SourceBPF | SourceKmsg).String(); s != "bpf+kmsg" {
		t.Errorf("String = %q", s)
	}
	if s := (FieldPid | FieldComm).String(); s != "pid|comm" {
		t.Errorf("Fields.String = %q", s)
	}
}

// TestMergerComplete: a kill every Complete source reported is flushed
// at once; its later reports within the window are dropped.
func TestMergerComplete(t *testing.T) {
	t0 := time.Unix(1000, 0)
	bpfK := Kill{Sources: SourceBPF, Known: FieldPid | FieldComm, Pid: 10, Comm: "x"}
	km := Kill{Sources: SourceKmsg, Known: FieldPid | FieldOOMMemcg | FieldGlobal, Pid: 10, OOMMemcg: "/a"}
	kmKilled := Kill{Sources: SourceKmsg, Known: FieldPid | FieldRSS, Pid: 10, AnonRSSBytes: 5}
	m := &Merger{Window: 50 * time.Millisecond, Complete: SourceBPF | SourceKmsg}
	m.Add(t0, bpfK)
	if got := m.Flush(t0); len(got) != 0 {
		t.Fatalf("flushed before kmsg: %v", got)
	}
	m.Add(t0.Add(time.Millisecond), km)
	got := m.Flush(t0.Add(time.Millisecond))
	if len(got) != 1 || got[0].Sources != SourceBPF|SourceKmsg || got[0].OOMMemcg != "/a" {
		t.Fatalf("got %+v, want the merged kill at once", got)
	}
	m.Add(t0.Add(2*time.Millisecond), kmKilled)
	if got := m.Flush(t0.Add(2 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("late report flushed: %v", got)
	}
	if got := m.Flush(t0.Add(50 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("early kill flushed again: %v", got)
	}
	if !m.Next().IsZero() {
		t.Errorf("pending left: next %v", m.Next())
	}
	// Without the second source, the window still ends it.
	m.Add(t0, bpfK)
	if got := m.Flush(t0.Add(50 * time.Millisecond)); len(got) != 1 {
		t.Fatalf("got %v, want the bpf kill at the window's end", got)
	}
}

// TestMergerRepeat: with Repeat, a process emitted as killed is not
// emitted again when the kernel marks it again past the window (through
// another thread, memory.oom.group), nor for the kernel's "Killed process
// <tid>" line of that thread, in either order; another process, the same
// pid in another memcg, or the same pid after Repeat are kills of their
// own.
func TestMergerRepeat(t *testing.T) {
	t0 := time.Unix(1000, 0)
	kill := func(pid int, memcg string) Kill {
		return Kill{Sources: SourceBPF, Known: FieldPid | FieldMemcg, Pid: pid, Memcg: memcg}
	}
	thread := func(pid, tid int) Kill { k := kill(pid, "/a"); k.Tid = tid; return k }
	kmsg := func(pid int) Kill { return Kill{Sources: SourceKmsg, Known: FieldPid, Pid: pid} }
	type report struct {
		after time.Duration
		k     Kill
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for name, tc := range map[string]struct {
		repeat time.Duration
		then   []report
		want   int
	}{
		"same process, 300 ms later":    {repeat: time.Second, then: []report{{ms(300), kill(10, "/a")}}, want: 1},
		"its kmsg line, no memcg":       {repeat: time.Second, then: []report{{ms(300), kmsg(10)}}, want: 1},
		"another thread, then its line": {repeat: time.Second, then: []report{{ms(300), thread(10, 12)}, {ms(310), kmsg(12)}}, want: 1},
		"the line first, then the mark": {repeat: time.Second, then: []report{{ms(300), kmsg(12)}, {ms(305), thread(10, 12)}}, want: 1},
		"another thread in the window":  {repeat: time.Second, then: []report{{ms(10), thread(10, 12)}, {ms(20), kmsg(12)}}, want: 1},
		"its line first, in the window": {repeat: time.Second, then: []report{{ms(10), kmsg(12)}, {ms(15), thread(10, 12)}}, want: 1},
		"another process":               {repeat: time.Second, then: []report{{ms(300), kill(11, "/a")}}, want: 2},
		"the pid in another memcg":      {repeat: time.Second, then: []report{{ms(300), kill(10, "/b")}}, want: 2},
		"after Repeat":                  {repeat: time.Second, then: []report{{2 * time.Second, kill(10, "/a")}}, want: 2},
		"without Repeat: only Window":   {then: []report{{ms(300), kill(10, "/a")}}, want: 2},
	} {
		t.Run(name, func(t *testing.T) {
			m := &Merger{Window: 50 * time.Millisecond, Repeat: tc.repeat}
			m.Add(t0, kill(10, "/a"))
			var got []Kill
			for _, r := range tc.then {
				got = append(got, m.Flush(t0.Add(r.after))...)
				m.Add(t0.Add(r.after), r.k)
			}
			got = append(got, m.Flush(t0.Add(time.Minute))...)
			if len(got) != tc.want {
				t.Fatalf("kills %+v, want %d", got, tc.want)
			}
		})
	}
}
