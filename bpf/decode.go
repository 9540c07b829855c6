//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// The records the C programs put in their ring buffers, decoded by hand at
// fixed offsets (no reflection). The offsets mirror the C structs; a test
// checks them against the types bpf2go generated from the objects' BTF.

// Sizes of the C event structs.
const (
	oomEventSize     = 144
	reclaimEventSize = 96
	exitEventSize    = 88
	cgroupEventSize  = 304
	commLen          = 16
)

// Offsets in struct oom_event.
const (
	oomOffKtime       = 0
	oomOffKnown       = 8
	oomOffTotalVM     = 16
	oomOffAnonRSS     = 24
	oomOffFileRSS     = 32
	oomOffShmemRSS    = 40
	oomOffPgtables    = 48
	oomOffCgroupID    = 56
	oomOffMemcgID     = 64
	oomOffMemcgUsage  = 72
	oomOffMemcgLimit  = 80
	oomOffPid         = 88
	oomOffTgid        = 92
	oomOffUID         = 96
	oomOffOOMScoreAdj = 100
	oomOffKillerPid   = 104
	oomOffKillerTgid  = 108
	oomOffComm        = 112
	oomOffKillerComm  = 128
)

// Offsets in struct reclaim_event.
const (
	rclOffKtime       = 0
	rclOffKnown       = 8
	rclOffDuration    = 16
	rclOffNrReclaimed = 24
	rclOffCgroupID    = 32
	rclOffMemcgID     = 40
	rclOffMemcgUsage  = 48
	rclOffMemcgLimit  = 56
	rclOffPid         = 64
	rclOffTgid        = 68
	rclOffOrder       = 72
	rclOffGFPFlags    = 76
	rclOffComm        = 80
)

// Offsets in struct exit_event.
const (
	exitOffKtime     = 0
	exitOffKnown     = 8
	exitOffStart     = 16
	exitOffMaxRSS    = 24
	exitOffCgroupID  = 32
	exitOffMemcgID   = 40
	exitOffPid       = 48
	exitOffTgid      = 52
	exitOffPPid      = 56
	exitOffExitCode  = 60
	exitOffGroupDead = 64
	exitOffComm      = 72
)

// Offsets in struct cgroup_event.
const (
	cgOffKtime       = 0
	cgOffID          = 8
	cgOffHierarchyID = 16
	cgOffLevel       = 20
	cgOffOp          = 24
	cgOffPid         = 28
	cgOffComm        = 32
	cgOffPath        = 48
	cgPathLen        = 256
)

var le = binary.LittleEndian

func u64(b []byte, off int) uint64 { return le.Uint64(b[off : off+8]) }
func u32(b []byte, off int) uint32 { return le.Uint32(b[off : off+4]) }
func i32(b []byte, off int) int32  { return int32(le.Uint32(b[off : off+4])) }

// cstring returns the NUL-terminated string in b[off:off+n].
func cstring(b []byte, off, n int) string {
	s := b[off : off+n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

func shortRecord(what string, got, want int) error {
	return fmt.Errorf("bpf: %s record of %d bytes, want %d", what, got, want)
}

// stamp checks that b holds a whole record of what (size bytes) and
// returns when the record was made: every record starts with its ktime
// (CLOCK_MONOTONIC ns), as wall-clock time and as the ktime.
func stamp(b []byte, what string, size int, wall wallClock) (time.Time, time.Duration, error) {
	if len(b) < size {
		return time.Time{}, 0, shortRecord(what, len(b), size)
	}
	k := u64(b, 0)
	return wall(k), time.Duration(k), nil
}

// memcgV1ID is the v1 memcg id at off where known says the record has it.
func memcgV1ID(b []byte, known Fields, off int) uint64 {
	if !known.Has(FieldMemcgV1ID) {
		return 0
	}
	return u64(b, off)
}

// memcgUsage is the memcg usage and limit at off and off+8 where known
// says the record has them.
func memcgUsage(b []byte, known Fields, off int) (usage, limit uint64) {
	if !known.Has(FieldMemcgUsage) {
		return 0, 0
	}
	return u64(b, off), u64(b, off+8)
}

// wallClock converts a CLOCK_MONOTONIC time in ns (bpf_ktime_get_ns) to
// wall-clock time.
type wallClock func(ktime uint64) time.Time

func decodeOOMKill(b []byte, mode AttachMode, wall wallClock) (OOMKill, error) {
	t, k, err := stamp(b, "oom", oomEventSize, wall)
	if err != nil {
		return OOMKill{}, err
	}
	known := Fields(u64(b, oomOffKnown))
	ev := OOMKill{
		Time:          t,
		Ktime:         k,
		Mode:          mode,
		Known:         known,
		Pid:           int(u32(b, oomOffPid)),
		Tgid:          int(u32(b, oomOffTgid)),
		Comm:          cstring(b, oomOffComm, commLen),
		UID:           u32(b, oomOffUID),
		OOMScoreAdj:   int(i32(b, oomOffOOMScoreAdj)),
		TotalVMBytes:  u64(b, oomOffTotalVM),
		AnonRSSBytes:  u64(b, oomOffAnonRSS),
		FileRSSBytes:  u64(b, oomOffFileRSS),
		ShmemRSSBytes: u64(b, oomOffShmemRSS),
		PgtablesBytes: u64(b, oomOffPgtables),
		CgroupID:      u64(b, oomOffCgroupID),
		KillerPid:     int(u32(b, oomOffKillerPid)),
		KillerTgid:    int(u32(b, oomOffKillerTgid)),
		KillerComm:    cstring(b, oomOffKillerComm, commLen),
	}
	ev.MemcgV1ID = memcgV1ID(b, known, oomOffMemcgID)
	ev.MemcgUsageBytes, ev.MemcgLimitBytes = memcgUsage(b, known, oomOffMemcgUsage)
	return ev, nil
}

func decodeReclaimStall(b []byte, mode AttachMode, wall wallClock) (ReclaimStall, error) {
	t, k, err := stamp(b, "reclaim", reclaimEventSize, wall)
	if err != nil {
		return ReclaimStall{}, err
	}
	known := Fields(u64(b, rclOffKnown))
	ev := ReclaimStall{
		Time:        t,
		Ktime:       k,
		Mode:        mode,
		Known:       known,
		Duration:    time.Duration(u64(b, rclOffDuration)),
		NrReclaimed: u64(b, rclOffNrReclaimed),
		Order:       int(i32(b, rclOffOrder)),
		GFPFlags:    u32(b, rclOffGFPFlags),
		Pid:         int(u32(b, rclOffPid)),
		Tgid:        int(u32(b, rclOffTgid)),
		Comm:        cstring(b, rclOffComm, commLen),
		CgroupID:    u64(b, rclOffCgroupID),
	}
	ev.MemcgV1ID = memcgV1ID(b, known, rclOffMemcgID)
	ev.MemcgUsageBytes, ev.MemcgLimitBytes = memcgUsage(b, known, rclOffMemcgUsage)
	return ev, nil
}

func decodeProcessExit(b []byte, mode AttachMode, wall wallClock) (ProcessExit, error) {
	t, k, err := stamp(b, "exit", exitEventSize, wall)
	if err != nil {
		return ProcessExit{}, err
	}
	known := Fields(u64(b, exitOffKnown))
	status := u32(b, exitOffExitCode)
	ev := ProcessExit{
		Time:        t,
		Ktime:       k,
		Mode:        mode,
		Known:       known,
		Pid:         int(u32(b, exitOffPid)),
		Tgid:        int(u32(b, exitOffTgid)),
		PPid:        int(u32(b, exitOffPPid)),
		Comm:        cstring(b, exitOffComm, commLen),
		Status:      status,
		ExitCode:    int(status>>8) & 0xff,
		Signal:      int(status & 0x7f),
		CoreDumped:  status&0x80 != 0,
		GroupDead:   u32(b, exitOffGroupDead) != 0,
		MaxRSSBytes: u64(b, exitOffMaxRSS),
		CgroupID:    u64(b, exitOffCgroupID),
	}
	if known.Has(FieldStartTime) {
		ev.Start = wall(u64(b, exitOffStart))
	}
	ev.MemcgV1ID = memcgV1ID(b, known, exitOffMemcgID)
	return ev, nil
}

func decodeCgroupEvent(b []byte, mode AttachMode, wall wallClock) (CgroupEvent, error) {
	t, k, err := stamp(b, "cgroup", cgroupEventSize, wall)
	if err != nil {
		return CgroupEvent{}, err
	}
	return CgroupEvent{
		Time:        t,
		Ktime:       k,
		Mode:        mode,
		Op:          CgroupOp(u32(b, cgOffOp)),
		HierarchyID: int(u32(b, cgOffHierarchyID)),
		ID:          u64(b, cgOffID),
		Level:       int(i32(b, cgOffLevel)),
		Path:        cstring(b, cgOffPath, cgPathLen),
		Pid:         int(u32(b, cgOffPid)),
		Comm:        cstring(b, cgOffComm, commLen),
	}, nil
}
