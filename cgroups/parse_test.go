package cgroups

import (
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func v(x uint64) Value { return known(x) }

func fixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseMemoryStat(t *testing.T) {
	cases := map[string]struct {
		in      string
		file    string
		want    MemoryStat
		wantErr bool
	}{
		"v2 pod (kernel 6.1)": {file: "v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/memory.stat", want: MemoryStat{
			AnonBytes: v(27250688), FileBytes: v(4194304), InactiveFileBytes: v(0), ActiveFileBytes: v(0),
			InactiveAnonBytes: v(31440896), ActiveAnonBytes: v(4096), ShmemBytes: v(4194304), FileMappedBytes: v(0),
			FileDirtyBytes: v(0), FileWritebackBytes: v(0), UnevictableBytes: v(0), PgFaults: v(6796), PgMajFaults: v(0),
			WorkingsetRefaultFile: v(0), WorkingsetActivateFile: v(0), SwapCachedBytes: v(0),
		}},
		"v1 pod: total_* win over local keys": {file: "v1/sys/fs/cgroup/memory/memory.stat", want: MemoryStat{
			AnonBytes: v(69890048), FileBytes: v(492871680), InactiveFileBytes: v(230281216), ActiveFileBytes: v(253489152),
			InactiveAnonBytes: v(62828544), ActiveAnonBytes: v(1576960), ShmemBytes: v(9084928), FileMappedBytes: v(31506432),
			FileDirtyBytes: v(33099776), FileWritebackBytes: v(0), UnevictableBytes: v(14458880), SwapBytes: v(0), SwapCachedBytes: v(0),
			PgFaults: v(155866326), PgMajFaults: v(52823), WorkingsetRefaultFile: v(7244481),
		}},
		"v1 total_ before local key still wins": {in: "total_rss 5\nrss 3\n", want: MemoryStat{AnonBytes: v(5)}},
		"before kernel 5.9: workingset_refault and _activate": {in: "workingset_refault 7\nworkingset_activate 3\n",
			want: MemoryStat{WorkingsetRefaultFile: v(7), WorkingsetActivateFile: v(3)}},
		"v1 local only":                       {in: "rss 3\ncache 4\n", want: MemoryStat{AnonBytes: v(3), FileBytes: v(4)}},
		"unknown keys and odd values skipped": {in: "anon 1\nweird -5\n\nfile 2", want: MemoryStat{AnonBytes: v(1), FileBytes: v(2)}},
		"missing keys stay unknown":           {in: "anon 1\n", want: MemoryStat{AnonBytes: v(1)}},
		"empty":                               {in: ""},
		"bad value of a used key":             {in: "anon -1\n", wantErr: true},
		"three fields":                        {in: "anon 1 2\n", wantErr: true},
		"key without value":                   {in: "anon\n", wantErr: true},
		"overflow":                            {in: "anon 18446744073709551616\n", wantErr: true},
		"max uint64":                          {in: "anon 18446744073709551615\n", want: MemoryStat{AnonBytes: v(18446744073709551615)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := []byte(tc.in)
			if tc.file != "" {
				in = fixture(t, tc.file)
			}
			got, err := ParseMemoryStat(in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t", err, tc.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrSyntax) {
					t.Errorf("error %v does not wrap ErrSyntax", err)
				}
				return
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseKeyedFiles(t *testing.T) {
	t.Run("memory.events after an OOM (6.1)", func(t *testing.T) {
		got, err := ParseMemoryEvents(fixture(t, "v2/sys/fs/cgroup/kubepods/besteffort/oomed/memory.events"))
		want := MemoryEvents{Low: v(0), High: v(1262), Max: v(19), OOM: v(1), OOMKill: v(1), OOMGroupKill: v(0)}
		if err != nil || got != want {
			t.Errorf("got %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("memory.events of an older kernel: no oom_group_kill", func(t *testing.T) {
		got, err := ParseMemoryEvents([]byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"))
		if err != nil || got.OOMGroupKill.Known || got.OOMKill != v(1) {
			t.Errorf("got %+v, %v", got, err)
		}
	})
	t.Run("memory.events bad", func(t *testing.T) {
		if _, err := ParseMemoryEvents([]byte("oom_kill x\n")); !errors.Is(err, ErrSyntax) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("oom_control after an OOM (v1)", func(t *testing.T) {
		got, err := ParseOOMControl(fixture(t, "v1/sys/fs/cgroup/memory/kubepods/besteffort/oomed/memory.oom_control"))
		want := OOMControl{OOMKillDisable: v(0), UnderOOM: v(0), OOMKill: v(1)}
		if err != nil || got != want {
			t.Errorf("got %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("oom_control of a kernel before 4.13: no oom_kill", func(t *testing.T) {
		got, err := ParseOOMControl([]byte("oom_kill_disable 0\nunder_oom 0\n"))
		if err != nil || got.OOMKill.Known {
			t.Errorf("got %+v, %v", got, err)
		}
	})
	cpuCases := map[string]struct {
		file string
		want CPUStat
	}{
		"v2 with the cpu controller": {"v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/cpu.stat", CPUStat{
			UsageNs: v(345333000), UserNs: v(52036000), SystemNs: v(293296000),
			Periods: v(37), ThrottledPeriods: v(34), ThrottledNs: v(5010371000)}},
		"v2 without the cpu controller (hybrid unified)": {"hybrid/sys/fs/cgroup/unified/kubepods/burstable/pod7c5b9d2e/cpu.stat", CPUStat{
			UsageNs: v(365282000), UserNs: v(338079000), SystemNs: v(27202000)}},
		"v1 cpu controller": {"hybrid/sys/fs/cgroup/cpu/kubepods/burstable/pod7c5b9d2e/cpu.stat", CPUStat{
			Periods: v(9), ThrottledPeriods: v(6), ThrottledNs: v(294896416)}},
	}
	for name, tc := range cpuCases {
		t.Run("cpu.stat "+name, func(t *testing.T) {
			got, err := ParseCPUStat(fixture(t, tc.file))
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
	t.Run("cpuacct.stat ticks to ns", func(t *testing.T) {
		got, err := ParseCPUAcctStat(fixture(t, "hybrid/sys/fs/cgroup/cpuacct/kubepods/burstable/pod7c5b9d2e/cpuacct.stat"))
		want := CPUAcctStat{UserNs: v(330000000), SystemNs: v(20000000)}
		if err != nil || got != want {
			t.Errorf("got %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("usec saturate", func(t *testing.T) {
		got, err := ParseCPUStat([]byte("usage_usec 18446744073709551615\n"))
		if err != nil || got.UsageNs != v(Unlimited) {
			t.Errorf("got %+v, %v", got, err)
		}
	})
}

func TestParsePressure(t *testing.T) {
	line := func(a10, a60, a300 float64, us int64) PressureLine {
		return PressureLine{Known: true, Avg10: a10, Avg60: a60, Avg300: a300, Total: time.Duration(us) * time.Microsecond}
	}
	cases := map[string]struct {
		in      string
		file    string
		want    Pressure
		wantErr bool
	}{
		"cgroup cpu.pressure": {file: "v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/cpu.pressure", want: Pressure{
			Some: line(13.94, 2.51, 0.52, 2571826), Full: line(13.94, 2.51, 0.52, 2564751)}},
		"node io": {file: "hybrid/proc/pressure/io", want: Pressure{
			Some: line(1.86, 1.74, 1.97, 50348832), Full: line(0.75, 0.87, 0.92, 19910782)}},
		"kernel before 5.13: cpu has no full line": {in: "some avg10=0.00 avg60=0.10 avg300=100.00 total=5\n",
			want: Pressure{Some: line(0, 0.1, 100, 5)}},
		"unknown kind and key skipped": {in: "some avg10=1.00 avg60=2.00 avg300=3.00 total=4 new=x\nmaybe a=1\n",
			want: Pressure{Some: line(1, 2, 3, 4)}},
		"missing total":   {in: "some avg10=1.00 avg60=2.00 avg300=3.00\n", wantErr: true},
		"bad average":     {in: "some avg10=1e3 avg60=2.00 avg300=3.00 total=1\n", wantErr: true},
		"negative total":  {in: "some avg10=1.00 avg60=2.00 avg300=3.00 total=-1\n", wantErr: true},
		"field without =": {in: "some avg10\n", wantErr: true},
		"empty":           {in: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := []byte(tc.in)
			if tc.file != "" {
				in = fixture(t, tc.file)
			}
			got, err := ParsePressure(in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseIOStat(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want IOStat
	}{
		{"two devices (6.1 format)", fixture(t, "v2/sys/fs/cgroup/kubepods/io.stat"), IOStat{
			ReadBytes: 91889664, WriteBytes: 613781504, ReadOps: 9142, WriteOps: 1605,
			Devices: []DeviceIO{
				{Major: 8, Minor: 16, ReadBytes: 1459200, WriteBytes: 314773504, ReadOps: 192, WriteOps: 353},
				{Major: 8, Minor: 0, ReadBytes: 90430464, WriteBytes: 299008000, ReadOps: 8950, WriteOps: 1252},
			}}},
		{"empty (no I/O yet)", fixture(t, "v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/io.stat"), IOStat{}},
		{"three devices, old kernel (no dbytes), a device twice",
			[]byte("259:0 rbytes=10 wbytes=20 rios=1 wios=2\n253:3 rbytes=5 wbytes=0 rios=1 wios=0\n" +
				"259:0 rbytes=1 wbytes=1 rios=1 wios=1\n7:1 wbytes=4096\n"), IOStat{
				ReadBytes: 16, WriteBytes: 4117, ReadOps: 3, WriteOps: 3,
				Devices: []DeviceIO{
					{Major: 259, Minor: 0, ReadBytes: 11, WriteBytes: 21, ReadOps: 2, WriteOps: 3},
					{Major: 253, Minor: 3, ReadBytes: 5, ReadOps: 1},
					{Major: 7, Minor: 1, WriteBytes: 4096},
				}}},
		{"saturating sums", []byte("8:0 rbytes=18446744073709551615\n8:16 rbytes=1\n"), IOStat{
			ReadBytes: math.MaxUint64,
			Devices:   []DeviceIO{{Major: 8, ReadBytes: math.MaxUint64}, {Major: 8, Minor: 16, ReadBytes: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIOStat(tc.in, nil)
			if err != nil || !reflect.DeepEqual(normIO(got), normIO(tc.want)) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// normIO makes an empty Devices nil, for comparison.
func normIO(s IOStat) IOStat {
	if len(s.Devices) == 0 {
		s.Devices = nil
	}
	return s
}

func TestParseIOSyntax(t *testing.T) {
	for name, in := range map[string]string{
		"no device":     "rbytes=1\n",
		"bad value":     "8:0 rbytes=x\n",
		"no =":          "8:0 rbytes\n",
		"bad device":    "8:x rbytes=1\n",
		"device > u32":  "4294967296:0 rbytes=1\n",
		"blkio extra":   "8:0 Read 1 2\n",
		"blkio no dev":  "sda Read 1\n",
		"blkio total":   "Total x\n",
		"blkio dev>u32": "8:4294967296 Read 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			var got IOStat
			if strings.HasPrefix(name, "blkio") {
				got, err = ParseBlkio([]byte(in), false, IOStat{Devices: make([]DeviceIO, 0, 1)})
			} else {
				got, err = ParseIOStat([]byte(in), make([]DeviceIO, 0, 1))
			}
			if !errors.Is(err, ErrSyntax) || got.ReadBytes != 0 || len(got.Devices) != 0 {
				t.Errorf("got %+v, %v; want nothing, ErrSyntax", got, err)
			}
		})
	}
}

func TestParseBlkio(t *testing.T) {
	t.Run("one device, bytes then ops", func(t *testing.T) {
		base := "v1/sys/fs/cgroup/blkio/kubepods/burstable/pod7c5b9d2e/"
		s, err := ParseBlkio(fixture(t, base+"blkio.throttle.io_service_bytes_recursive"), false, IOStat{})
		want := IOStat{ReadBytes: 17391616, WriteBytes: 16777216,
			Devices: []DeviceIO{{Major: 254, ReadBytes: 17391616, WriteBytes: 16777216}}}
		if err != nil || !reflect.DeepEqual(s, want) {
			t.Errorf("bytes %+v, %v", s, err)
		}
		s, err = ParseBlkio(fixture(t, base+"blkio.throttle.io_serviced_recursive"), true, s)
		want.ReadOps, want.WriteOps = 117, 32
		want.Devices[0].ReadOps, want.Devices[0].WriteOps = 117, 32
		if err != nil || !reflect.DeepEqual(s, want) {
			t.Errorf("ops %+v, %v", s, err)
		}
	})
	t.Run("two devices, one only in the ops file", func(t *testing.T) {
		bytesFile := "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Total 12288\n" +
			"253:1 Read 100\n253:1 Write 0\n253:1 Total 100\nTotal 12388\n"
		opsFile := "8:0 Read 1\n8:0 Write 2\n8:0 Total 3\n253:1 Read 7\n253:1 Total 7\n" +
			"8:16 Read 0\n8:16 Write 5\nTotal 15\n"
		s, err := ParseBlkio([]byte(bytesFile), false, IOStat{Devices: make([]DeviceIO, 0, 4)})
		if err == nil {
			s, err = ParseBlkio([]byte(opsFile), true, s)
		}
		want := IOStat{ReadBytes: 4196, WriteBytes: 8192, ReadOps: 8, WriteOps: 7, Devices: []DeviceIO{
			{Major: 8, ReadBytes: 4096, WriteBytes: 8192, ReadOps: 1, WriteOps: 2},
			{Major: 253, Minor: 1, ReadBytes: 100, ReadOps: 7},
			{Major: 8, Minor: 16, WriteOps: 5},
		}}
		if err != nil || !reflect.DeepEqual(s, want) {
			t.Errorf("got %+v, %v\nwant %+v", s, err, want)
		}
	})
	t.Run("no I/O", func(t *testing.T) {
		s, err := ParseBlkio([]byte("Total 0\n"), false, IOStat{})
		if err != nil || !reflect.DeepEqual(s, IOStat{}) {
			t.Errorf("got %+v, %v", s, err)
		}
	})
}

func TestParseUeventDevname(t *testing.T) {
	for in, want := range map[string]string{
		"MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\nDISKSEQ=1\n": "sda",
		"MAJOR=253\nMINOR=0\nDEVNAME=dm-0\r\n":                     "dm-0",
		"MAJOR=8\nMINOR=0\n":                                       "",
		"":                                                         "",
	} {
		if got := string(ParseUeventDevname([]byte(in))); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	got, err := ParseMeminfo(fixture(t, "v2/proc/meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		got  Value
		want uint64
	}{
		"MemTotal":     {got.MemTotal, 480172 * 1024},
		"MemAvailable": {got.MemAvailable, 444652 * 1024},
		"SwapTotal":    {got.SwapTotal, 0},
		"Inactive(file)/Active(anon)": {Value{V: got.InactiveFile.V + got.ActiveAnon.V, Known: got.InactiveFile.Known && got.ActiveAnon.Known},
			7608 * 1024},
		"Committed_AS": {got.CommittedAS, 83288 * 1024},
	} {
		if c.got != v(c.want) {
			t.Errorf("%s = %v, want %d", name, c.got, c.want)
		}
	}
	if _, err := ParseMeminfo([]byte("MemTotal: 12 MB\n")); !errors.Is(err, ErrSyntax) {
		t.Errorf("unit MB: err = %v", err)
	}
	if _, err := ParseMeminfo([]byte("garbage\n")); !errors.Is(err, ErrSyntax) {
		t.Errorf("no colon: err = %v", err)
	}
	m, err := ParseMeminfo([]byte("HugePages_Total:       0\nMemTotal: 1\n"))
	if err != nil || m.MemTotal != v(1) {
		t.Errorf("no unit: %+v, %v", m.MemTotal, err)
	}
}

func TestParseLoadavg(t *testing.T) {
	got, err := ParseLoadavg(fixture(t, "hybrid/proc/loadavg"))
	want := Loadavg{Load1: 0.66, Load5: 2.16, Load15: 3.11, Runnable: 4, Total: 108, LastPID: 28443}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	for _, in := range []string{"", "1 2 3 4/5", "1 2 3 4 5", "1 2 3 4/5 6 7", "1 2 3 4/5 6\nmore", "a 2 3 4/5 6"} {
		if _, err := ParseLoadavg([]byte(in)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v, want ErrSyntax", in, err)
		}
	}
}

func TestParseValue(t *testing.T) {
	cases := map[string]struct {
		in   string
		want Value
		err  bool
	}{
		"number":              {in: "67108864\n", want: v(67108864)},
		"max":                 {in: "max\n", want: v(Unlimited)},
		"no newline":          {in: "5", want: v(5)},
		"spaces":              {in: "  5 \n", want: v(5)},
		"empty":               {in: "", err: true},
		"two values":          {in: "5 6\n", err: true},
		"two lines":           {in: "5\n6\n", err: true},
		"negative":            {in: "-1\n", err: true},
		"cpu.max is no value": {in: "max 100000\n", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseValue([]byte(tc.in))
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("got %v, %v; want %v, error %t", got, err, tc.want, tc.err)
			}
		})
	}
	if got := v1Limit(v(9223372036854771712)); !got.IsUnlimited() {
		t.Errorf("v1 page counter maximum = %v, want max", got)
	}
	if got := v1Limit(v(67108864)); got != v(67108864) {
		t.Errorf("v1 64 MiB limit = %v", got)
	}
}

func TestAtofMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0.00", "43.08", "100.00", "0.01", "99.99", "7", "123456789012345", "1234567890123456.5", "0.1"} {
		got, ok := atof([]byte(s))
		if !ok {
			t.Errorf("%s: not parsed", s)
			continue
		}
		want, _ := refFloat(s)
		if got != want {
			t.Errorf("%s: %v, strconv %v", s, got, want)
		}
	}
}

func TestParsersDoNotAllocate(t *testing.T) {
	ms := fixture(t, "v1/sys/fs/cgroup/memory/kubepods/burstable/pod7c5b9d2e/memory.stat")
	mi := fixture(t, "v2/proc/meminfo")
	psi := fixture(t, "v2/sys/fs/cgroup/cpu.pressure")
	io := fixture(t, "v2/sys/fs/cgroup/kubepods/io.stat")
	blk := fixture(t, "v1/sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes_recursive")
	la := fixture(t, "v2/proc/loadavg")
	devs := make([]DeviceIO, 0, 2)
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = ParseMemoryStat(ms)
		_, _ = ParseMeminfo(mi)
		_, _ = ParsePressure(psi)
		_, _ = ParseIOStat(io, devs[:0])
		_, _ = ParseBlkio(blk, false, IOStat{Devices: devs[:0]})
		_, _ = ParseLoadavg(la)
		_, _ = ParseValue([]byte("max\n"))
	})
	if allocs != 0 {
		t.Errorf("parsers allocate %v times per run, want 0", allocs)
	}
}
