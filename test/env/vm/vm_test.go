package vm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// cpioEntry is one entry read back by readNewc.
type cpioEntry struct {
	name      string
	mode      uint32
	data      []byte
	rdevMajor uint32
	rdevMinor uint32
}

// readNewc parses a newc archive strictly: magic, 4-byte alignment, trailer.
func readNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off+110 > len(b) {
			t.Fatalf("truncated header at %d", off)
		}
		h := string(b[off : off+110])
		if h[:6] != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatalf("header field %d at %d: %v", i, off, err)
			}
			return uint32(v)
		}
		mode, size, namesize := field(1), int(field(6)), int(field(11))
		name := string(b[off+110 : off+110+namesize-1])
		if b[off+110+namesize-1] != 0 {
			t.Fatalf("name %q not NUL-terminated", name)
		}
		off = align(off + 110 + namesize)
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name: name, mode: mode, data: b[off : off+size], rdevMajor: field(9), rdevMinor: field(10)})
		off = align(off + size)
	}
}

func TestInitramfsDeterministicNewc(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vm.test")
	box := filepath.Join(dir, "busybox")
	extra := filepath.Join(dir, "testbox")
	for p, content := range map[string]string{bin: "TESTBINARY", box: "BUSYBOX", extra: "EXTRA1"} {
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := &Options{TestBinary: bin, Args: []string{"-test.v", "it's"}, Env: []string{"A=b c"},
		ExtraFiles: map[string]string{"/opt/x/testbox": extra}}
	build := func(name string) []byte {
		p := filepath.Join(dir, name)
		if err := writeInitramfs(p, box, "0123abcd", opts); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := build("a.cpio"), build("b.cpio")
	if !bytes.Equal(a, b) {
		t.Fatal("two initramfs builds from the same inputs differ")
	}
	entries := readNewc(t, a)
	seen := map[string]cpioEntry{}
	for _, e := range entries {
		if dir := filepath.Dir(e.name); dir != "." {
			if p, ok := seen[dir]; !ok || p.mode&0o170000 != cpioModeDir {
				t.Errorf("%s comes before its directory %s", e.name, dir)
			}
		}
		seen[e.name] = e
	}
	for name, want := range map[string]string{
		"kernelet/vm.test": "TESTBINARY", "bin/busybox": "BUSYBOX",
		"opt/x/testbox": "EXTRA1", "kernelet/nonce": "0123abcd\n", "bin/sh": "busybox",
	} {
		if got := string(seen[name].data); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if e := seen["dev/console"]; e.mode != cpioModeChar|0o600 || e.rdevMajor != 5 || e.rdevMinor != 1 {
		t.Errorf("dev/console = %+v", e)
	}
	if e := seen["tmp"]; e.mode != cpioModeDir|0o1777 {
		t.Errorf("tmp mode %o", e.mode)
	}
	if e := seen["init"]; e.mode != cpioModeFile|0o755 || !strings.Contains(string(e.data), `/kernelet/vm.test '-test.v' 'it'\''s'`) ||
		!strings.Contains(string(e.data), `export A='b c'`) {
		t.Errorf("init (mode %o):\n%s", e.mode, e.data)
	}
}

func TestShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `"$HOME" $(id) \n`, "a\nb", "'''"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != s {
			t.Errorf("quote(%q) came back as %q", s, out)
		}
	}
}

func TestParseExit(t *testing.T) {
	const nonce = "feedbeef"
	for _, tc := range []struct {
		out  string
		want string
		ok   bool
	}{
		{"boot\nKERNELET-VM-EXIT-feedbeef=0\n[ 1.0] reboot: Restarting system\n", "0", true},
		{"noise[ 2.1] oops KERNELET-VM-EXIT-feedbeef=137\r\n", "137", true},
		{"KERNELET-VM-EXIT-feedbeef=init-failed\n", "init-failed", true},
		{"KERNELET-VM-EXIT-00000000=0\n", "", false},
		{"KERNELET-VM-EXIT-feedbeef=\n", "", false},
		{"", "", false},
	} {
		got, ok := parseExit(tc.out, nonce)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseExit(%q) = %q, %v; want %q, %v", tc.out, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFacts(t *testing.T) {
	out := "x\n" + FactPrefix + `kernel="6.1.0-56-cloud-amd64"` + "\n" +
		"[ 1.2] " + FactPrefix + `events="oom 1\noom_kill 1\n"` + "\n" + FactPrefix + "raw=a b\n"
	f := Facts(out)
	if f["kernel"] != "6.1.0-56-cloud-amd64" || f["events"] != "oom 1\noom_kill 1\n" || f["raw"] != "a b" {
		t.Errorf("Facts = %q", f)
	}
}

func TestCompareVersions(t *testing.T) {
	a, b := "/boot/vmlinuz-6.9.0-30-cloud-amd64", "/boot/vmlinuz-6.10.0-1-cloud-amd64"
	if compareVersions(a, b) >= 0 || compareVersions(b, a) <= 0 || compareVersions(a, a) != 0 {
		t.Errorf("version order of %s and %s wrong", a, b)
	}
	if compareVersions("/boot/vmlinuz-6.1.0-9-cloud-amd64", "/boot/vmlinuz-6.1.0-56-cloud-amd64") >= 0 {
		t.Error("6.1.0-9 should sort before 6.1.0-56")
	}
}

func TestHostTSC(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		if hostTSCkHz() != 0 {
			t.Error("TSC rate reported off amd64")
		}
		return
	}
	a, b := measureTSCkHz(), measureTSCkHz()
	if a == 0 || b == 0 {
		t.Fatalf("TSC rate not measured: %d, %d kHz", a, b)
	}
	if d := float64(a) - float64(b); d*d > (float64(a)/1000)*(float64(a)/1000) {
		t.Errorf("TSC rate measurements disagree by more than 0.1%%: %d vs %d kHz", a, b)
	}
	t.Logf("host TSC %s MHz", fmt.Sprintf("%.3f", float64(a)/1000))
}

// TestCheckOptions covers defaults and the -test.timeout injection.
func TestCheckOptions(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "x.test")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{TestBinary: bin, Kernel: "/k", Args: []string{"-test.v"}}
	if err := checkOptions(&o); err != nil {
		t.Fatal(err)
	}
	if o.MemoryMiB != 512 || o.CPUs != 2 || o.Timeout != DefaultTimeout {
		t.Errorf("defaults: %+v", o)
	}
	if got := strings.Join(o.Args, " "); got != "-test.timeout=2m45s -test.v" {
		t.Errorf("args %q", got)
	}
	o = Options{TestBinary: bin, Kernel: "/k", Args: []string{"-test.timeout", "1m"}}
	if err := checkOptions(&o); err != nil || len(o.Args) != 2 {
		t.Errorf("explicit -test.timeout: %v %q", err, o.Args)
	}
	for _, bad := range []Options{
		{TestBinary: bin, Kernel: "/k", Env: []string{"NOEQUALS"}},
		{TestBinary: bin, Kernel: "/k", Env: []string{"BAD-KEY=1"}},
		{TestBinary: bin, Kernel: "/k", ExtraFiles: map[string]string{"rel/path": bin}},
		{TestBinary: bin, Kernel: "/k", ExtraFiles: map[string]string{"/init": bin}},
		{TestBinary: filepath.Join(t.TempDir(), "missing")},
	} {
		if err := checkOptions(&bad); err == nil {
			t.Errorf("no error for %+v", bad)
		}
	}
}
