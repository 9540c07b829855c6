//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// The hand-written decoders must agree with the C structs, which bpf2go
// turned into Go types from the objects' BTF: encode a generated value,
// decode it by hand, compare.

func encode(t *testing.T, v any, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	if b.Len() != size {
		t.Fatalf("%T is %d bytes, the decoder expects %d", v, b.Len(), size)
	}
	return b.Bytes()
}

func comm(s string) (c [16]int8) {
	for i := range min(len(s), 15) {
		c[i] = int8(s[i])
	}
	return c
}

func fixedWall(k uint64) time.Time { return time.Unix(1_700_000_000, int64(k)) }

func TestDecodeOOMKill(t *testing.T) {
	in := oomOomEvent{
		KtimeNs: 123456789, Known: uint64(FieldPid | FieldTgid | FieldComm | FieldMemcgV1ID | FieldMemcgUsage | FieldKiller),
		TotalVm: 1 << 30, AnonRss: 32 << 20, FileRss: 4 << 20, ShmemRss: 1 << 20, Pgtables: 176128,
		CgroupId: 139067, MemcgId: 251726, MemcgUsage: 33 << 20, MemcgLimit: 32 << 20,
		Pid: 28953, Tgid: 28950, Uid: 1000, OomScoreAdj: -998, KillerPid: 28959, KillerTgid: 28950,
		Comm: comm("testbox"), KillerComm: comm("kworker/0:1"),
	}
	ev, err := decodeOOMKill(encode(t, in, oomEventSize), ModeRawTP, fixedWall)
	if err != nil {
		t.Fatal(err)
	}
	want := OOMKill{
		Time: fixedWall(123456789), Ktime: 123456789, Mode: ModeRawTP, Known: Fields(in.Known),
		Pid: 28953, Tgid: 28950, Comm: "testbox", UID: 1000, OOMScoreAdj: -998,
		TotalVMBytes: 1 << 30, AnonRSSBytes: 32 << 20, FileRSSBytes: 4 << 20, ShmemRSSBytes: 1 << 20, PgtablesBytes: 176128,
		CgroupID: 139067, MemcgV1ID: 251726, MemcgUsageBytes: 33 << 20, MemcgLimitBytes: 32 << 20,
		KillerPid: 28959, KillerTgid: 28950, KillerComm: "kworker/0:1",
	}
	if ev != want {
		t.Errorf("decoded\n%+v\nwant\n%+v", ev, want)
	}
	// Where the memcg is on cgroup v2, its id is not a v1 id.
	in.Known &^= uint64(FieldMemcgV1ID)
	if ev, _ := decodeOOMKill(encode(t, in, oomEventSize), ModeRawTP, fixedWall); ev.MemcgV1ID != 0 {
		t.Errorf("v1 memcg id %d decoded though unknown", ev.MemcgV1ID)
	}
	if _, err := decodeOOMKill(make([]byte, oomEventSize-1), ModeRawTP, fixedWall); err == nil {
		t.Error("short record decoded")
	}
}

func TestDecodeReclaimStall(t *testing.T) {
	in := reclaimReclaimEvent{
		KtimeNs: 99, Known: uint64(FieldPid | FieldMemcgV1ID | FieldMemcgUsage | FieldNrReclaimed | FieldGFP),
		DurationNs: 20_000, NrReclaimed: 32, CgroupId: 7, MemcgId: 8, MemcgUsage: 64 << 20, MemcgLimit: Unlimited,
		Pid: 10, Tgid: 9, Order: 2, GfpFlags: 0xcc0, Comm: comm("cat"),
	}
	ev, err := decodeReclaimStall(encode(t, in, reclaimEventSize), ModeTpBTF, fixedWall)
	if err != nil {
		t.Fatal(err)
	}
	want := ReclaimStall{
		Time: fixedWall(99), Ktime: 99, Mode: ModeTpBTF, Known: Fields(in.Known), Duration: 20 * time.Microsecond,
		NrReclaimed: 32, Order: 2, GFPFlags: 0xcc0, Pid: 10, Tgid: 9, Comm: "cat",
		CgroupID: 7, MemcgV1ID: 8, MemcgUsageBytes: 64 << 20, MemcgLimitBytes: Unlimited,
	}
	if ev != want {
		t.Errorf("decoded\n%+v\nwant\n%+v", ev, want)
	}
	if _, err := decodeReclaimStall(make([]byte, 10), ModeTpBTF, fixedWall); err == nil {
		t.Error("short record decoded")
	}
}

func TestDecodeProcessExit(t *testing.T) {
	tests := map[string]struct {
		status       uint32
		code, signal int
		core         bool
	}{
		"exit 3":        {status: 3 << 8, code: 3},
		"SIGKILL":       {status: 9, signal: 9},
		"SIGSEGV cored": {status: 0x80 | 11, signal: 11, core: true},
		"exit 255":      {status: 255 << 8, code: 255},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := exitExitEvent{
				KtimeNs: 5000, Known: uint64(FieldPid | FieldTgid | FieldExitCode | FieldStartTime | FieldMaxRSS | FieldMemcgV1ID),
				StartNs: 1000, Maxrss: 70 << 20, CgroupId: 1, MemcgId: 16931, Pid: 12, Tgid: 11, Ppid: 1,
				ExitCode: tc.status, GroupDead: 1, Comm: comm("testbox"),
			}
			ev, err := decodeProcessExit(encode(t, in, exitEventSize), ModeTracepoint, fixedWall)
			if err != nil {
				t.Fatal(err)
			}
			want := ProcessExit{
				Time: fixedWall(5000), Ktime: 5000, Mode: ModeTracepoint, Known: Fields(in.Known),
				Pid: 12, Tgid: 11, PPid: 1, Comm: "testbox", Status: tc.status, ExitCode: tc.code, Signal: tc.signal,
				CoreDumped: tc.core, GroupDead: true, MaxRSSBytes: 70 << 20, Start: fixedWall(1000), CgroupID: 1, MemcgV1ID: 16931,
			}
			if ev != want {
				t.Errorf("decoded\n%+v\nwant\n%+v", ev, want)
			}
		})
	}
}

func TestDecodeCgroupEvent(t *testing.T) {
	in := cgroupCgroupEvent{KtimeNs: 77, Id: 252254, HierarchyId: 4, Level: 1, Op: uint32(CgroupRmdir), Pid: 29658, Comm: comm("bpf.test")}
	path := "/kltest4ee436-bpf-cg-aa8553"
	for i := range len(path) {
		in.Path[i] = int8(path[i])
	}
	ev, err := decodeCgroupEvent(encode(t, in, cgroupEventSize), ModeRawTP, fixedWall)
	if err != nil {
		t.Fatal(err)
	}
	want := CgroupEvent{Time: fixedWall(77), Ktime: 77, Mode: ModeRawTP, Op: CgroupRmdir, HierarchyID: 4, ID: 252254, Level: 1, Path: path, Pid: 29658, Comm: "bpf.test"}
	if ev != want {
		t.Errorf("decoded\n%+v\nwant\n%+v", ev, want)
	}
	// A path that fills the buffer has no NUL: all 256 bytes are kept.
	for i := range in.Path {
		in.Path[i] = 'a'
	}
	if ev, _ := decodeCgroupEvent(encode(t, in, cgroupEventSize), ModeRawTP, fixedWall); len(ev.Path) != cgPathLen {
		t.Errorf("full path decoded to %d bytes", len(ev.Path))
	}
}

// The Fields values are those of the C enum kl_field.
func TestFieldsMatchC(t *testing.T) {
	pairs := []struct {
		c   oomKlField
		goF Fields
	}{
		{oomKlFieldKL_F_TGID, FieldTgid}, {oomKlFieldKL_F_COMM, FieldComm}, {oomKlFieldKL_F_UID, FieldUID},
		{oomKlFieldKL_F_OOM_SCORE_ADJ, FieldOOMScoreAdj}, {oomKlFieldKL_F_TOTAL_VM, FieldTotalVM},
		{oomKlFieldKL_F_RSS, FieldRSS}, {oomKlFieldKL_F_PGTABLES, FieldPgtables}, {oomKlFieldKL_F_CGROUP_ID, FieldCgroupID},
		{oomKlFieldKL_F_MEMCG_V1ID, FieldMemcgV1ID}, {oomKlFieldKL_F_MEMCG_USAGE, FieldMemcgUsage},
		{oomKlFieldKL_F_KILLER, FieldKiller}, {oomKlFieldKL_F_EXIT_CODE, FieldExitCode}, {oomKlFieldKL_F_MAXRSS, FieldMaxRSS},
		{oomKlFieldKL_F_PPID, FieldPPid}, {oomKlFieldKL_F_START_TIME, FieldStartTime}, {oomKlFieldKL_F_PID, FieldPid},
		{oomKlFieldKL_F_NR_RECLAIMED, FieldNrReclaimed}, {oomKlFieldKL_F_GFP, FieldGFP},
	}
	for _, p := range pairs {
		if Fields(p.c) != p.goF {
			t.Errorf("C %d != Go %v (%d)", p.c, p.goF, uint64(p.goF))
		}
	}
	if len(pairs) != len(fieldNames) {
		t.Errorf("%d C fields checked, Go names %d", len(pairs), len(fieldNames))
	}
	if CgroupMkdir != CgroupOp(cgroupCgroupOpCGROUP_OP_MKDIR) || CgroupRmdir != CgroupOp(cgroupCgroupOpCGROUP_OP_RMDIR) {
		t.Error("CgroupOp values differ from the C enum")
	}
}

func BenchmarkDecodeOOMKill(b *testing.B) {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, oomOomEvent{Pid: 1, Comm: comm("testbox")}); err != nil {
		b.Fatal(err)
	}
	rec := buf.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeOOMKill(rec, ModeTpBTF, fixedWall); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeReclaimStall(b *testing.B) {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, reclaimReclaimEvent{Pid: 1, Comm: comm("cat")}); err != nil {
		b.Fatal(err)
	}
	rec := buf.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeReclaimStall(rec, ModeTpBTF, fixedWall); err != nil {
			b.Fatal(err)
		}
	}
}
