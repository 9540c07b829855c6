package mountinfo

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:26 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory
31 22 0:27 / /mnt/with\040space rw master:3 - tmpfs tmpfs rw

40 22 0:30 / /sys/kernel/tracing rw - tracefs tracefs
`
	all, err := Parse(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("%d entries, want 4: %+v", len(all), all)
	}
	want := Entry{Root: "/", Point: "/sys/fs/cgroup/memory", Options: "rw,nosuid", FSType: "cgroup", Source: "cgroup", SuperOptions: "rw,memory"}
	if all[1] != want {
		t.Errorf("got %+v, want %+v", all[1], want)
	}
	if all[2].Point != "/mnt/with space" || all[3].SuperOptions != "" {
		t.Errorf("unescape or missing super options: %+v %+v", all[2], all[3])
	}
	tmpfs, err := Parse(strings.NewReader(in), func(e *Entry) bool { return e.FSType == "tmpfs" })
	if err != nil || len(tmpfs) != 1 {
		t.Errorf("filter: %+v %v", tmpfs, err)
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no separator": "22 1 253:1 / / rw,relatime shared:1 ext4 /dev/vda1 rw\n",
		"short":        "ok\n22 1 - cgroup2 cgroup2\n",
	} {
		if _, err := Parse(strings.NewReader(in), nil); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%s: want an error naming the line, got %v", name, err)
		}
	}
}

func TestSelf(t *testing.T) {
	es, err := Self(func(e *Entry) bool { return e.Point == "/" })
	if err != nil || len(es) == 0 {
		t.Fatalf("root mount not found: %v %v", es, err)
	}
}

func TestIsMountPoint(t *testing.T) {
	for path, want := range map[string]bool{"/proc": true, "/proc/self": false, "/no/such/path": false} {
		if got, err := IsMountPoint(path); err != nil || got != want {
			t.Errorf("IsMountPoint(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
}
