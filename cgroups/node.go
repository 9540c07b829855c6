package cgroups

import (
	"context"
	"fmt"
	"io/fs"
	"time"
)

// Node reads the node's memory (meminfo and the root cgroup's working set),
// PSI and pid limits into s, overwriting it: the inputs of kubelet's
// memory.available and pid.available signals, computed as kubelet does.
// /proc/meminfo is required; every other value is unknown when its file is
// missing.
func (r *Reader) Node(ctx context.Context, s *NodeStats) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.Timestamp = time.Now()
	sc := r.get()
	defer r.put(sc)
	if err := r.nodeMemory(sc, &s.Memory); err != nil {
		return fmt.Errorf("node memory: %w", err)
	}
	if err := r.nodePressure(sc, &s.Pressure); err != nil {
		return fmt.Errorf("node pressure: %w", err)
	}
	if err := r.nodePIDs(sc, &s.PIDs); err != nil {
		return fmt.Errorf("node pids: %w", err)
	}
	return nil
}

// nodeMemory: memory.available = MemTotal − working set of the root
// cgroup; working set = usage − inactive_file (floor 0); usage is v2 anon +
// file of the root memory.stat, v1 the root's memory.usage_in_bytes.
func (r *Reader) nodeMemory(sc *scratch, m *NodeMemoryStats) error {
	*m = NodeMemoryStats{Source: m.Source}
	sc.setProc(r.procRoot, "")
	b, absent, err := sc.read("meminfo")
	if err != nil {
		return err
	}
	if absent {
		return fmt.Errorf("%s: %w", sc.file(), fs.ErrNotExist)
	}
	if m.Meminfo, err = ParseMeminfo(b); err != nil {
		return wrapParse(sc, err)
	}
	m.CapacityBytes = m.Meminfo.MemTotal
	m.SwapTotalBytes, m.SwapFreeBytes = m.Meminfo.SwapTotal, m.Meminfo.SwapFree

	root := &sc.mem
	root.Source = m.Source
	if _, found, err := r.readMemory(sc, "/", root); err != nil {
		return err
	} else if !found {
		m.Source = Source{}
		return nil
	}
	m.Source = root.Source
	if root.Source.Version == 2 {
		m.UsageBytes = add(root.AnonBytes, root.FileBytes)
	} else {
		m.UsageBytes = root.UsageBytes
	}
	m.InactiveFileBytes = root.InactiveFileBytes
	m.WorkingSetBytes = sub(m.UsageBytes, m.InactiveFileBytes)
	m.AvailableBytes = sub(m.CapacityBytes, m.WorkingSetBytes)
	return nil
}

// nodePressure reads /proc/pressure/{cpu,memory,io}.
func (r *Reader) nodePressure(sc *scratch, p *PressureStats) error {
	*p = PressureStats{Source: p.Source}
	sc.setProc(r.procRoot, "pressure")
	found, err := readPressureFiles(sc, &procPressureFiles, p)
	if err != nil {
		return err
	}
	if !found {
		p.Source = Source{}
		return nil
	}
	// Version 2: PSI has the cgroup v2 format and semantics.
	sc.setSource(&p.Source, 2)
	return nil
}

// nodePIDs: pid.available = min(pid_max, threads-max) − the total of
// /proc/loadavg's running/TOTAL.
func (r *Reader) nodePIDs(sc *scratch, p *NodePIDStats) error {
	*p = NodePIDStats{}
	sc.setProc(r.procRoot, "")
	var err error
	if p.PidMax, err = sc.value("sys/kernel/pid_max"); err != nil {
		return err
	}
	if p.ThreadsMax, err = sc.value("sys/kernel/threads-max"); err != nil {
		return err
	}
	b, absent, err := sc.read("loadavg")
	if err != nil {
		return err
	}
	if !absent {
		la, err := ParseLoadavg(b)
		if err != nil {
			return wrapParse(sc, err)
		}
		p.Running = known(la.Total)
	}
	p.AvailablePIDs = sub(minValue(p.PidMax, p.ThreadsMax), p.Running)
	return nil
}
