package oom

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Sources is a set of places an OOM kill was seen.
type Sources uint8

// The OOM kill sources, best first.
const (
	// SourceBPF is the oom/mark_victim eBPF program (bpf.OOMTracer).
	SourceBPF Sources = 1 << iota
	// SourceMemoryEvents is a cgroup v2 memory.events oom_kill counter.
	SourceMemoryEvents
	// SourceOOMControl is a cgroup v1 memory.oom_control eventfd.
	SourceOOMControl
	// SourceKmsg is the kernel log (/dev/kmsg).
	SourceKmsg
)

var sourceNames = []struct {
	s    Sources
	name string
}{{SourceBPF, "bpf"}, {SourceMemoryEvents, "memory.events"}, {SourceOOMControl, "oom_control"}, {SourceKmsg, "kmsg"}}

// String lists the sources, e.g. "bpf+kmsg".
func (s Sources) String() string {
	var n []string
	for _, sn := range sourceNames {
		if s&sn.s != 0 {
			n = append(n, sn.name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, "+")
}

// MarshalText makes Sources a string in JSON.
func (s Sources) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Fields says which fields of a Kill are known.
type Fields uint32

// The fields of a Kill that may be unknown.
const (
	FieldPid Fields = 1 << iota
	FieldComm
	FieldUID
	FieldOOMScoreAdj
	FieldTotalVM
	// FieldRSS covers anon, file and shmem RSS.
	FieldRSS
	FieldPgtables
	// FieldCgroupID is the victim's cgroup v2 id.
	FieldCgroupID
	// FieldMemcgID is the victim's memcg id (v1 memory hierarchy; equal to
	// the v2 id on v2 hosts).
	FieldMemcgID
	// FieldMemcg is the victim's memcg path (Memcg).
	FieldMemcg
	// FieldOOMMemcg is the path (and, when it resolved, id) of the memcg
	// whose limit was hit.
	FieldOOMMemcg
	// FieldGlobal says whether Global is known.
	FieldGlobal
	// FieldCgroup is the victim's cgroup v2 path (Cgroup).
	FieldCgroup
	// FieldMemcgUsage covers the usage and limit of the victim's own
	// memcg when it was marked.
	FieldMemcgUsage
)

var fieldNames = []string{"pid", "comm", "uid", "oom_score_adj", "total_vm", "rss", "pgtables",
	"cgroup_id", "memcg_id", "memcg", "oom_memcg", "global", "cgroup", "memcg_usage"}

// Has reports whether all of want are known.
func (f Fields) Has(want Fields) bool { return f&want == want }

// String lists the known fields, e.g. "pid|comm".
func (f Fields) String() string {
	var n []string
	for i, name := range fieldNames {
		if f&(1<<i) != 0 {
			n = append(n, name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, "|")
}

// MarshalText makes Fields a string in JSON.
func (f Fields) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// PodRef names the pod and container a cgroup belongs to.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Container string `json:"container,omitempty"`
}

// String is "namespace/name" plus "/container" when known.
func (p PodRef) String() string {
	s := p.Namespace + "/" + p.Name
	if p.Container != "" {
		s += "/" + p.Container
	}
	return s
}

// Resolver attributes a cgroup (a path in a cgroup hierarchy, e.g.
// "/kubepods/burstable/pod<uid>/<container id>") to its pod and container.
// The agent side implements it (with CRI); ok is false for a cgroup of no
// known pod.
type Resolver interface {
	Resolve(ctx context.Context, cgroupPath string) (PodRef, bool)
}

// Kill is one OOM kill, merged from every source that saw it.
type Kill struct {
	// Time is when the kill happened, as the earliest source saw it.
	Time time.Time `json:"time"`
	// Sources are the sources that reported it.
	Sources Sources `json:"sources"`
	// Known says which of the fields below are set.
	Known Fields `json:"known"`
	// Global: a system-wide OOM (constraint CONSTRAINT_NONE), not a memcg
	// limit.
	Global     bool   `json:"global"`
	Constraint string `json:"constraint,omitempty"`

	Pid int `json:"pid,omitempty"`
	// Tid is the task (thread) the kernel marked when a source knows it
	// and it is not the process Pid (eBPF): the kernel's "Killed process
	// <id>" line names that task, so a kmsg report with Pid = Tid is the
	// same kill.
	Tid         int    `json:"tid,omitempty"`
	Comm        string `json:"comm,omitempty"`
	UID         uint32 `json:"uid"`
	OOMScoreAdj int    `json:"oom_score_adj"`

	TotalVMBytes  uint64 `json:"total_vm_bytes,omitempty"`
	AnonRSSBytes  uint64 `json:"anon_rss_bytes,omitempty"`
	FileRSSBytes  uint64 `json:"file_rss_bytes,omitempty"`
	ShmemRSSBytes uint64 `json:"shmem_rss_bytes,omitempty"`
	PgtablesBytes uint64 `json:"pgtables_bytes,omitempty"`

	// CgroupID and Cgroup are the victim's cgroup v2 id and path.
	CgroupID uint64 `json:"cgroup_id,omitempty"`
	Cgroup   string `json:"cgroup,omitempty"`
	// MemcgID and Memcg are the victim's memcg (the v1 memory hierarchy
	// on hybrid and v1 hosts; the v2 cgroup on v2 hosts).
	MemcgID uint64 `json:"memcg_id,omitempty"`
	Memcg   string `json:"memcg,omitempty"`
	// OOMMemcg and OOMMemcgID are the memcg whose limit was hit (the
	// victim's or an ancestor).
	OOMMemcg   string `json:"oom_memcg,omitempty"`
	OOMMemcgID uint64 `json:"oom_memcg_id,omitempty"`
	// MemcgUsageBytes and MemcgLimitBytes are the usage and limit of the
	// victim's own memcg when it was marked (FieldMemcgUsage; the limit
	// is math.MaxUint64 when none is set).
	MemcgUsageBytes uint64 `json:"memcg_usage_bytes,omitempty"`
	MemcgLimitBytes uint64 `json:"memcg_limit_bytes,omitempty"`

	// Pod is the pod and container, when a Resolver knew the cgroup.
	Pod *PodRef `json:"pod,omitempty"`
}

// CgroupPath is the best path known for the victim's cgroup: its memcg,
// else its v2 cgroup, else the OOM memcg.
func (k *Kill) CgroupPath() string {
	switch {
	case k.Memcg != "":
		return k.Memcg
	case k.Cgroup != "":
		return k.Cgroup
	}
	return k.OOMMemcg
}

// String is a one-line summary.
func (k Kill) String() string {
	return fmt.Sprintf("oom kill pid=%d comm=%q cgroup=%s global=%v sources=%s", k.Pid, k.Comm, k.CgroupPath(), k.Global, k.Sources)
}

// sameKill reports whether a and b are reports of the same kill: the same
// pid, or, when one of them has no pid, a memcg in common.
func sameKill(a, b *Kill) bool {
	if a.Known.Has(FieldPid) && b.Known.Has(FieldPid) {
		return a.Pid == b.Pid
	}
	for _, x := range a.memcgKeys() {
		for _, y := range b.memcgKeys() {
			if x == y {
				return true
			}
		}
	}
	return false
}

// memcgKeys are the memcg ids and paths a kill names.
func (k *Kill) memcgKeys() []string {
	var keys []string
	if k.MemcgID != 0 {
		keys = append(keys, fmt.Sprint("id:", k.MemcgID))
	}
	if k.OOMMemcgID != 0 {
		keys = append(keys, fmt.Sprint("id:", k.OOMMemcgID))
	}
	if k.Memcg != "" {
		keys = append(keys, "path:"+k.Memcg)
	}
	if k.OOMMemcg != "" {
		keys = append(keys, "path:"+k.OOMMemcg)
	}
	return keys
}

// merge adds what b knows and k does not; the earliest time wins.
func (k *Kill) merge(b *Kill) {
	if !b.Time.IsZero() && (k.Time.IsZero() || b.Time.Before(k.Time)) {
		k.Time = b.Time
	}
	k.Sources |= b.Sources
	add := b.Known &^ k.Known
	if add.Has(FieldPid) {
		k.Pid = b.Pid
	}
	if k.Tid == 0 {
		k.Tid = b.Tid
	}
	if add.Has(FieldComm) {
		k.Comm = b.Comm
	}
	if add.Has(FieldUID) {
		k.UID = b.UID
	}
	if add.Has(FieldOOMScoreAdj) {
		k.OOMScoreAdj = b.OOMScoreAdj
	}
	if add.Has(FieldTotalVM) {
		k.TotalVMBytes = b.TotalVMBytes
	}
	if add.Has(FieldRSS) {
		k.AnonRSSBytes, k.FileRSSBytes, k.ShmemRSSBytes = b.AnonRSSBytes, b.FileRSSBytes, b.ShmemRSSBytes
	}
	if add.Has(FieldPgtables) {
		k.PgtablesBytes = b.PgtablesBytes
	}
	if add.Has(FieldCgroupID) {
		k.CgroupID = b.CgroupID
	}
	if add.Has(FieldCgroup) {
		k.Cgroup = b.Cgroup
	}
	if add.Has(FieldMemcgID) {
		k.MemcgID = b.MemcgID
	}
	if add.Has(FieldMemcg) {
		k.Memcg = b.Memcg
	}
	if add.Has(FieldOOMMemcg) {
		k.OOMMemcg, k.OOMMemcgID = b.OOMMemcg, b.OOMMemcgID
	}
	if add.Has(FieldGlobal) {
		k.Global = b.Global
	}
	if add.Has(FieldMemcgUsage) {
		k.MemcgUsageBytes, k.MemcgLimitBytes = b.MemcgUsageBytes, b.MemcgLimitBytes
	}
	if k.Constraint == "" {
		k.Constraint = b.Constraint
	}
	if k.Pod == nil {
		k.Pod = b.Pod
	}
	k.Known |= b.Known
}

// Merger deduplicates kill reports: a report that is the same kill as one
// seen within Window (same pid; or, without a pid, the same memcg) is
// merged into it. A kill that every source of Complete reported is
// flushed at once; reports of it that come later in its window are
// dropped. With Repeat, a process already emitted as killed is not
// emitted again for Repeat after its window (a report with its pid and no
// other memcg is dropped). It is not safe for concurrent use.
type Merger struct {
	// Window is how long reports of one kill are gathered.
	Window time.Duration
	// Complete, when not zero, are the sources after whose reports a
	// kill is flushed without waiting for its window.
	Complete Sources
	// Repeat is how long a process emitted as killed absorbs further
	// reports of a kill of it: under memory.oom.group the kernel may mark
	// a dying process again through another of its threads — tens of ms
	// after the first on a busy or emulated machine, past Window — and
	// log a second "Killed process" line for it; a process dies once.
	// Zero: none (only Window merges).
	Repeat  time.Duration
	pending []*pendingKill
	recent  []recentKill
}

// DefaultRepeat is the Repeat of a Stream's Merger.
const DefaultRepeat = 10 * time.Second

// recentKill is a process emitted as killed, remembered until until,
// with the tasks of it the kernel marked.
type recentKill struct {
	k     Kill
	tids  []int
	until time.Time
}

// sameTask reports whether report k names the process of kill p (tids:
// the tasks of p the kernel marked): its pid is p's or one of those
// tasks, or its task is p's pid.
func sameTask(p *Kill, tids []int, k *Kill) bool {
	if !p.Known.Has(FieldPid) || !k.Known.Has(FieldPid) {
		return false
	}
	return k.Pid == p.Pid || slices.Contains(tids, k.Pid) || k.Tid != 0 && k.Tid == p.Pid
}

// repeats reports whether k is a repeated report of the kill of r's
// process: the same process (sameTask) and no memcg that contradicts r's.
func repeats(r *recentKill, k *Kill) bool {
	return sameTask(&r.k, r.tids, k) && memcgsAgree(&r.k, k)
}

type pendingKill struct {
	k Kill
	// tids are the tasks of the process the kernel marked (Kill.Tid of
	// its reports).
	tids  []int
	first time.Time // when the first report arrived (the caller's clock)
	// flushed: emitted early; kept until its window ends to absorb late
	// reports.
	flushed bool
}

// Add takes a report that arrived at now.
func (m *Merger) Add(now time.Time, k Kill) {
	keep := m.recent[:0]
	for _, r := range m.recent {
		if now.Before(r.until) {
			keep = append(keep, r)
		}
	}
	clear(m.recent[len(keep):])
	m.recent = keep
	for i := range m.recent {
		if r := &m.recent[i]; repeats(r, &k) {
			if k.Tid != 0 && !slices.Contains(r.tids, k.Tid) {
				r.tids = append(r.tids, k.Tid)
				m.dropTask(k.Tid, &r.k, nil)
			}
			return
		}
	}
	for _, p := range m.pending {
		if sameKill(&p.k, &k) || sameTask(&p.k, p.tids, &k) {
			if !p.flushed {
				p.k.merge(&k)
			}
			if k.Tid != 0 && !slices.Contains(p.tids, k.Tid) {
				p.tids = append(p.tids, k.Tid)
				m.dropTask(k.Tid, &p.k, p)
			}
			return
		}
	}
	p := &pendingKill{k: k, first: now}
	if k.Tid != 0 {
		p.tids = []int{k.Tid}
	}
	m.pending = append(m.pending, p)
}

// dropTask drops a pending report that only names task tid of the
// process of kill (a task the kernel marked again, whose "Killed process
// <tid>" line came before the report that ties it to its process), unless
// it names another memcg; into is that kill's own pending entry, which
// takes what the dropped report knew (nil: the kill was emitted).
func (m *Merger) dropTask(tid int, kill *Kill, into *pendingKill) {
	keep := m.pending[:0]
	for _, p := range m.pending {
		if p != into && !p.flushed && p.k.Known.Has(FieldPid) && p.k.Pid == tid && p.k.Tid == 0 && memcgsAgree(&p.k, kill) {
			if into != nil && !into.flushed {
				into.k.merge(&p.k)
			}
			continue
		}
		keep = append(keep, p)
	}
	clear(m.pending[len(keep):])
	m.pending = keep
}

// memcgsAgree: a and b name no memcg in contradiction (one names none, or
// they share one).
func memcgsAgree(a, b *Kill) bool {
	ak, bk := a.memcgKeys(), b.memcgKeys()
	if len(ak) == 0 || len(bk) == 0 {
		return true
	}
	for _, x := range ak {
		if slices.Contains(bk, x) {
			return true
		}
	}
	return false
}

// Flush returns the kills whose window ended by now or that are complete,
// oldest first (all of them when now is zero).
func (m *Merger) Flush(now time.Time) []Kill {
	var out []Kill
	keep := m.pending[:0]
	for _, p := range m.pending {
		ended := now.IsZero() || !now.Before(p.first.Add(m.Window))
		switch {
		case ended && p.flushed:
			m.remember(p)
		case ended:
			out = append(out, p.k)
			m.remember(p)
		case m.Complete != 0 && p.k.Sources&m.Complete == m.Complete && !p.flushed:
			out = append(out, p.k)
			p.flushed = true
			keep = append(keep, p)
		default:
			keep = append(keep, p)
		}
	}
	clear(m.pending[len(keep):])
	m.pending = keep
	return out
}

// remember keeps the process of a kill whose window ended for Repeat
// after that end.
func (m *Merger) remember(p *pendingKill) {
	if m.Repeat <= 0 || !p.k.Known.Has(FieldPid) {
		return
	}
	m.recent = append(m.recent, recentKill{k: p.k, tids: p.tids, until: p.first.Add(m.Window + m.Repeat)})
}

// Next is when the next window ends (zero when nothing is pending).
func (m *Merger) Next() time.Time {
	var t time.Time
	for _, p := range m.pending {
		if e := p.first.Add(m.Window); t.IsZero() || e.Before(t) {
			t = e
		}
	}
	return t
}
