package oom

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Real records captured from /dev/kmsg on the development host (Linux 6.18,
// hybrid cgroups) after a memcg OOM kill of testbox in a test cgroup.
const (
	kmsgOOMKill = "6,12105,5318407579,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kltest922c95-watch-7f8faf,task_memcg=/kltest922c95-watch-7f8faf,task=testbox,pid=5165,uid=0"
	kmsgKilled  = "3,12106,5318407627,-;Memory cgroup out of memory: Killed process 5165 (testbox) total-vm:1264520kB, anon-rss:48640kB, file-rss:4488kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:0"
	kmsgInvoked = "4,12107,5319322403,-;testbox invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"
)

func TestParseKmsg(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    KmsgRecord
		wantErr error // nil: no error; errAny: some error
	}{
		"oom-kill memcg": {in: kmsgOOMKill, want: KmsgRecord{
			Kind: KmsgOOMKill, Seq: 12105, Since: 5318407579 * time.Microsecond,
			Known: FieldPid | FieldComm | FieldUID | FieldMemcg | FieldOOMMemcg | FieldGlobal,
			Pid:   5165, Comm: "testbox", Constraint: "CONSTRAINT_MEMCG",
			OOMMemcg: "/kltest922c95-watch-7f8faf", TaskMemcg: "/kltest922c95-watch-7f8faf",
		}},
		"killed memcg": {in: kmsgKilled, want: KmsgRecord{
			Kind: KmsgKilled, Seq: 12106, Since: 5318407627 * time.Microsecond,
			Known: FieldPid | FieldComm | FieldUID | FieldTotalVM | FieldRSS | FieldPgtables | FieldOOMScoreAdj | FieldGlobal,
			Pid:   5165, Comm: "testbox", TotalVMBytes: 1264520 << 10, AnonRSSBytes: 48640 << 10,
			FileRSSBytes: 4488 << 10, PgtablesBytes: 188 << 10,
		}},
		"killed global, comm with paren": {
			in: "3,900,123456789,-;Out of memory: Killed process 4242 (a) b) total-vm:10kB, anon-rss:4kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:8kB oom_score_adj:1000",
			want: KmsgRecord{Kind: KmsgKilled, Seq: 900, Since: 123456789 * time.Microsecond, Global: true,
				Known: FieldPid | FieldComm | FieldUID | FieldTotalVM | FieldRSS | FieldPgtables | FieldOOMScoreAdj | FieldGlobal,
				Pid:   4242, Comm: "a) b", UID: 1000, OOMScoreAdj: 1000, TotalVMBytes: 10 << 10, AnonRSSBytes: 4 << 10, PgtablesBytes: 8 << 10},
		},
		"oom-kill global with dictionary": {
			in: "6,901,123456700,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=a,pid=4242,uid=1000\n SUBSYSTEM=x",
			want: KmsgRecord{Kind: KmsgOOMKill, Seq: 901, Since: 123456700 * time.Microsecond, Global: true,
				Known: FieldPid | FieldComm | FieldUID | FieldMemcg | FieldGlobal, Constraint: "CONSTRAINT_NONE",
				Pid: 4242, Comm: "a", UID: 1000, TaskMemcg: "/user.slice"},
		},
		"not oom":     {in: kmsgInvoked, wantErr: ErrNotOOM},
		"bad header":  {in: "x,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,pid=1", wantErr: errAny},
		"no message":  {in: "6,1,2,-", wantErr: errAny},
		"no pid":      {in: "6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,task=x", wantErr: errAny},
		"bad rss":     {in: "3,1,2,-;Out of memory: Killed process 1 (x) total-vm:zkB", wantErr: errAny},
		"old killed":  {in: "3,1,2,-;Out of memory: Killed process 7 (x)", want: KmsgRecord{Kind: KmsgKilled, Seq: 1, Since: 2 * time.Microsecond, Global: true, Known: FieldPid | FieldComm | FieldGlobal, Pid: 7, Comm: "x"}},
		"zero pid":    {in: "3,1,2,-;Out of memory: Killed process 0 (x)", wantErr: errAny},
		"short head":  {in: "3,1;x", wantErr: errAny},
		"ts overflow": {in: "3,1,99999999999999999999,-;x", wantErr: errAny},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseKmsg(tc.in)
			switch {
			case tc.wantErr == errAny:
				if err == nil || errors.Is(err, ErrNotOOM) {
					t.Fatalf("ParseKmsg = %+v, %v; want a parse error", got, err)
				}
				return
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("ParseKmsg: %v", err)
			}
			if got != tc.want {
				t.Errorf("ParseKmsg =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// FuzzParseKmsg checks that the parser never panics and that what it
// accepts is consistent: a pid > 0, Known matching the set fields, comm
// and paths that are substrings of the message (a group line: its memcg).
func FuzzParseKmsg(f *testing.F) {
	for _, s := range []string{kmsgOOMKill, kmsgKilled, kmsgInvoked,
		"6,102,1000200,-;Tasks in /kubepods.slice/x.scope are going to be killed due to memory.oom.group set"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseKmsg(in)
		if err != nil {
			return
		}
		_, msg, ok := strings.Cut(in, ";")
		if !ok {
			t.Fatalf("accepted %q without ';'", in)
		}
		if r.Kind == KmsgGroup {
			if r.TaskMemcg == "" || !strings.Contains(msg, r.TaskMemcg) || r.Known != FieldMemcg {
				t.Fatalf("group line %q: memcg %q known %v", in, r.TaskMemcg, r.Known)
			}
			return
		}
		if r.Pid <= 0 || !r.Known.Has(FieldPid) {
			t.Fatalf("accepted %q with pid %d (known %v)", in, r.Pid, r.Known)
		}
		if r.Kind != KmsgOOMKill && r.Kind != KmsgKilled {
			t.Fatalf("kind %d", r.Kind)
		}
		for _, s := range []string{r.Comm, r.TaskMemcg, r.OOMMemcg, r.Constraint} {
			if !strings.Contains(msg, s) {
				t.Fatalf("field %q not in %q", s, msg)
			}
		}
		if r.Comm != "" != r.Known.Has(FieldComm) && r.Comm != "" {
			t.Fatalf("comm %q but known %v", r.Comm, r.Known)
		}
		if r.OOMScoreAdj < -1000 || r.OOMScoreAdj > 1000 {
			t.Fatalf("oom_score_adj %d", r.OOMScoreAdj)
		}
	})
}

// A memory.oom.group kill as the kernel logs it (6.1, the v2 test node):
// the group's other tasks get the group's memcg and the OOM's limiting
// memcg from the lines before them; the group line is no kill; a Killed
// line long after the group line, or of another OOM, stays as it is.
func TestKmsgGroups(t *testing.T) {
	const scope = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podx.slice/cri-containerd-c.scope"
	lines := []string{
		"6,100,1000000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-c.scope,mems_allowed=0,oom_memcg=" + scope + ",task_memcg=" + scope + ",task=testbox,pid=1713,uid=0",
		"3,101,1000100,-;Memory cgroup out of memory: Killed process 1713 (testbox) total-vm:1265716kB, anon-rss:29104kB, file-rss:1928kB, shmem-rss:0kB, UID:0 pgtables:156kB oom_score_adj:984",
		"6,102,1000200,-;Tasks in " + scope + " are going to be killed due to memory.oom.group set",
		"3,103,1000300,-;Memory cgroup out of memory: Killed process 1698 (sh) total-vm:2260kB, anon-rss:4kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:28kB oom_score_adj:984",
		"3,104,3000300,-;Memory cgroup out of memory: Killed process 1800 (late) total-vm:2260kB, anon-rss:4kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:28kB oom_score_adj:984",
	}
	var g KmsgGroups
	var kills []KmsgRecord
	for _, l := range lines {
		r, err := ParseKmsg(l)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if g.Apply(&r) {
			kills = append(kills, r)
		}
	}
	if len(kills) != 4 {
		t.Fatalf("%d kill records, want 4 (the group line is none): %+v", len(kills), kills)
	}
	if k := kills[1]; k.Pid != 1713 || k.Known.Has(FieldMemcg) {
		t.Errorf("the victim's Killed line: %+v, want it as parsed", k)
	}
	if k := kills[2]; k.Pid != 1698 || k.TaskMemcg != scope || k.OOMMemcg != scope || !k.Known.Has(FieldMemcg|FieldOOMMemcg) || k.Constraint != "CONSTRAINT_MEMCG" {
		t.Errorf("the group's task: %+v, want the group's memcg and the OOM's", k)
	}
	if k := kills[3]; k.Known.Has(FieldMemcg) {
		t.Errorf("a Killed line 2 s after the group line: %+v, want no memcg", k)
	}
}
