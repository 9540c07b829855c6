package oom

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNotOOM is returned by ParseKmsg for a well-formed record that is not
// an OOM kill report.
var ErrNotOOM = errors.New("kmsg: not an oom kill record")

// KmsgKind says which OOM line a kmsg record is.
type KmsgKind uint8

const (
	// KmsgOOMKill is the summary line
	// "oom-kill:constraint=...,oom_memcg=...,task_memcg=...,task=<comm>,pid=<pid>,uid=<uid>".
	KmsgOOMKill KmsgKind = iota + 1
	// KmsgKilled is "Memory cgroup out of memory: Killed process <pid>
	// (<comm>) total-vm:...kB, anon-rss:..." (memcg OOM) or "Out of
	// memory: Killed process ..." (global OOM).
	KmsgKilled
	// KmsgGroup is "Tasks in <memcg> are going to be killed due to
	// memory.oom.group set" (TaskMemcg): the Killed lines that follow
	// are the group's tasks, which have no summary line of their own
	// (KmsgGroups gives them the memcg).
	KmsgGroup
)

const (
	groupPrefix = "Tasks in "
	groupSuffix = " are going to be killed due to memory.oom.group set"
)

// KmsgRecord is one OOM line of /dev/kmsg, parsed. Which fields are set
// depends on Kind (see Known).
type KmsgRecord struct {
	Kind KmsgKind
	// Seq is the record's sequence number; Since is its timestamp (the
	// kernel's local clock since boot).
	Seq   uint64
	Since time.Duration
	Known Fields

	Pid  int
	Comm string
	UID  uint32
	// Constraint is the OOM constraint (CONSTRAINT_NONE for a global OOM,
	// CONSTRAINT_MEMCG, CONSTRAINT_CPUSET, CONSTRAINT_MEMORY_POLICY).
	Constraint string
	// OOMMemcg is the memcg whose limit was hit; TaskMemcg the victim's
	// (paths in the memory controller's hierarchy).
	OOMMemcg, TaskMemcg string
	// Global: the OOM was system-wide (a "Out of memory:" line, or
	// CONSTRAINT_NONE).
	Global bool

	TotalVMBytes, AnonRSSBytes, FileRSSBytes, ShmemRSSBytes, PgtablesBytes uint64
	OOMScoreAdj                                                            int
}

// ParseKmsg parses one /dev/kmsg record ("pri,seq,ts_usec,flags[,...];message"
// with optional continuation lines). It returns ErrNotOOM for a valid
// record that is no OOM kill line, another error for a malformed one.
func ParseKmsg(record string) (KmsgRecord, error) {
	var r KmsgRecord
	head, msg, ok := strings.Cut(record, ";")
	if !ok {
		return r, errors.New("kmsg: record without ';'")
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // continuation (dictionary) lines follow
	}
	fields := strings.Split(head, ",")
	if len(fields) < 4 {
		return r, fmt.Errorf("kmsg: header %q: want pri,seq,ts,flags", head)
	}
	if _, err := strconv.ParseUint(fields[0], 10, 32); err != nil {
		return r, fmt.Errorf("kmsg: priority %q: %w", fields[0], err)
	}
	seq, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return r, fmt.Errorf("kmsg: sequence %q: %w", fields[1], err)
	}
	ts, err := strconv.ParseUint(fields[2], 10, 63)
	if err != nil || ts > uint64(1<<63-1)/1000 {
		return r, fmt.Errorf("kmsg: timestamp %q: bad value", fields[2])
	}
	r.Seq, r.Since = seq, time.Duration(ts)*time.Microsecond
	switch {
	case strings.HasPrefix(msg, "oom-kill:"):
		return r, parseOOMKillLine(&r, msg[len("oom-kill:"):])
	case strings.HasPrefix(msg, "Memory cgroup out of memory: Killed process "):
		return r, parseKilledLine(&r, msg[len("Memory cgroup out of memory: Killed process "):], false)
	case strings.HasPrefix(msg, "Out of memory: Killed process "):
		return r, parseKilledLine(&r, msg[len("Out of memory: Killed process "):], true)
	case strings.HasPrefix(msg, groupPrefix) && strings.HasSuffix(msg, groupSuffix) && len(msg) > len(groupPrefix)+len(groupSuffix):
		r.Kind, r.TaskMemcg, r.Known = KmsgGroup, msg[len(groupPrefix):len(msg)-len(groupSuffix)], FieldMemcg
		return r, nil
	}
	return r, ErrNotOOM
}

// KmsgGroups carries an OOM's context from record to record of the kernel
// log: a memory.oom.group kill logs its victim's summary line and Killed
// line, then "Tasks in <memcg> are going to be killed …" and a Killed line
// per other task of the group, which names neither memcg. Apply gives
// such a Killed line the group's memcg and the OOM's limiting memcg and
// constraint, as the summary line said them.
type KmsgGroups struct {
	oom   KmsgRecord // the last summary line
	group string     // the memcg of the last group line
	since time.Duration
}

// kmsgGroupSpan bounds how long after its group line a Killed line is
// taken for one of the group's tasks (they are logged together).
const kmsgGroupSpan = time.Second

// Apply updates the context with r and completes r when it is a Killed
// line of a group's task; it reports whether r is a kill (the group line
// itself is not).
func (g *KmsgGroups) Apply(r *KmsgRecord) bool {
	switch r.Kind {
	case KmsgOOMKill:
		g.oom, g.group = *r, ""
	case KmsgGroup:
		g.group, g.since = r.TaskMemcg, r.Since
		return false
	case KmsgKilled:
		if g.group == "" || r.Known.Has(FieldMemcg) || r.Since < g.since || r.Since-g.since > kmsgGroupSpan {
			return true
		}
		r.TaskMemcg, r.Known = g.group, r.Known|FieldMemcg
		if g.oom.OOMMemcg != "" && !r.Known.Has(FieldOOMMemcg) {
			r.OOMMemcg, r.Known = g.oom.OOMMemcg, r.Known|FieldOOMMemcg
		}
		if r.Constraint == "" {
			r.Constraint = g.oom.Constraint
		}
	}
	return true
}

// parseOOMKillLine parses "constraint=...,nodemask=...,cpuset=...,
// mems_allowed=...,oom_memcg=...,task_memcg=...,task=...,pid=...,uid=...".
// Values do not contain commas except the nodemask/mems_allowed ranges
// ("0-1,3"), so a key is only taken where a known name follows a comma.
func parseOOMKillLine(r *KmsgRecord, s string) error {
	r.Kind = KmsgOOMKill
	keys := []string{"constraint", "nodemask", "cpuset", "mems_allowed", "oom_memcg", "task_memcg", "task", "pid", "uid"}
	vals := map[string]string{}
	rest := s
	for i, k := range keys {
		if !strings.HasPrefix(rest, k+"=") {
			if i == 0 {
				return errors.New("kmsg: oom-kill line without constraint=")
			}
			continue
		}
		rest = rest[len(k)+1:]
		// The value ends at the next ",<later key>=".
		end := len(rest)
		for _, nk := range keys[i+1:] {
			if j := strings.Index(rest, ","+nk+"="); j >= 0 && j < end {
				end = j
			}
		}
		vals[k] = rest[:end]
		rest = strings.TrimPrefix(rest[end:], ",")
	}
	pid, ok := vals["pid"]
	if !ok {
		return errors.New("kmsg: oom-kill line without pid=")
	}
	p, err := strconv.ParseInt(pid, 10, 32)
	if err != nil || p <= 0 {
		return fmt.Errorf("kmsg: oom-kill pid %q: bad value", pid)
	}
	r.Pid = int(p)
	r.Known |= FieldPid
	r.Constraint = vals["constraint"]
	r.Global = r.Constraint == "CONSTRAINT_NONE"
	r.Known |= FieldGlobal
	if c, ok := vals["task"]; ok {
		r.Comm, r.Known = c, r.Known|FieldComm
	}
	if u, ok := vals["uid"]; ok {
		v, err := strconv.ParseUint(u, 10, 32)
		if err != nil {
			return fmt.Errorf("kmsg: oom-kill uid %q: %w", u, err)
		}
		r.UID, r.Known = uint32(v), r.Known|FieldUID
	}
	if m, ok := vals["oom_memcg"]; ok && m != "" {
		r.OOMMemcg, r.Known = m, r.Known|FieldOOMMemcg
	}
	if m, ok := vals["task_memcg"]; ok && m != "" {
		r.TaskMemcg, r.Known = m, r.Known|FieldMemcg
	}
	return nil
}

// parseKilledLine parses "<pid> (<comm>) total-vm:<n>kB, anon-rss:<n>kB,
// file-rss:<n>kB, shmem-rss:<n>kB, UID:<n> pgtables:<n>kB oom_score_adj:<n>".
func parseKilledLine(r *KmsgRecord, s string, global bool) error {
	r.Kind = KmsgKilled
	r.Global, r.Known = global, FieldGlobal
	pidStr, rest, ok := strings.Cut(s, " (")
	if !ok {
		return errors.New("kmsg: killed line without (comm)")
	}
	p, err := strconv.ParseInt(pidStr, 10, 32)
	if err != nil || p <= 0 {
		return fmt.Errorf("kmsg: killed pid %q: bad value", pidStr)
	}
	r.Pid, r.Known = int(p), r.Known|FieldPid
	// comm may contain ") "; the fields start at the last ") total-vm:".
	i := strings.LastIndex(rest, ") total-vm:")
	if i < 0 {
		if strings.HasSuffix(rest, ")") { // older kernels: no sizes
			r.Comm, r.Known = rest[:len(rest)-1], r.Known|FieldComm
			return nil
		}
		return errors.New("kmsg: killed line without total-vm")
	}
	r.Comm, r.Known = rest[:i], r.Known|FieldComm
	rest = rest[i+2:]
	var haveRSS int
	for _, f := range strings.Fields(rest) {
		f = strings.TrimSuffix(f, ",")
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		kb := func(dst *uint64) error {
			n, err := strconv.ParseUint(strings.TrimSuffix(v, "kB"), 10, 54)
			if err != nil {
				return fmt.Errorf("kmsg: killed %s %q: %w", k, v, err)
			}
			*dst = n << 10
			return nil
		}
		switch k {
		case "total-vm":
			if err := kb(&r.TotalVMBytes); err != nil {
				return err
			}
			r.Known |= FieldTotalVM
		case "anon-rss", "file-rss", "shmem-rss":
			dst := map[string]*uint64{"anon-rss": &r.AnonRSSBytes, "file-rss": &r.FileRSSBytes, "shmem-rss": &r.ShmemRSSBytes}[k]
			if err := kb(dst); err != nil {
				return err
			}
			haveRSS++
		case "pgtables":
			if err := kb(&r.PgtablesBytes); err != nil {
				return err
			}
			r.Known |= FieldPgtables
		case "UID":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return fmt.Errorf("kmsg: killed UID %q: %w", v, err)
			}
			r.UID, r.Known = uint32(n), r.Known|FieldUID
		case "oom_score_adj":
			n, err := strconv.ParseInt(v, 10, 16)
			if err != nil || n < -1000 || n > 1000 {
				return fmt.Errorf("kmsg: killed oom_score_adj %q: bad value", v)
			}
			r.OOMScoreAdj, r.Known = int(n), r.Known|FieldOOMScoreAdj
		}
	}
	if haveRSS == 3 {
		r.Known |= FieldRSS
	}
	return nil
}
