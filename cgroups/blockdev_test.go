package cgroups

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeUevent(t testing.TB, sys, dev, body string) {
	t.Helper()
	dir := filepath.Join(sys, "dev", "block", dev)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBlockDevices(t *testing.T) {
	sys := t.TempDir()
	writeUevent(t, sys, "8:0", "MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\n")
	writeUevent(t, sys, "7:3", "MAJOR=7\nMINOR=3\n")
	now := time.Unix(1000, 0)
	d := NewBlockDevices(sys + "/")
	d.now = func() time.Time { return now }

	for _, c := range []struct {
		major, minor uint32
		want         string
	}{{8, 0, "/dev/sda"}, {7, 3, ""}, {259, 1, ""}} {
		if got := d.Name(c.major, c.minor); got != c.want {
			t.Errorf("%d:%d = %q, want %q", c.major, c.minor, got, c.want)
		}
	}

	// Cached: a changed sysfs is not read again within deviceRecheck...
	writeUevent(t, sys, "8:0", "DEVNAME=sdb\n")
	writeUevent(t, sys, "259:1", "DEVNAME=nvme0n1p1\n")
	now = now.Add(deviceRecheck - time.Second)
	if got := d.Name(8, 0); got != "/dev/sda" {
		t.Errorf("cached 8:0 = %q", got)
	}
	if got := d.Name(259, 1); got != "" {
		t.Errorf("cached miss 259:1 = %q", got)
	}
	// ...and is after it, found and missing names alike.
	now = now.Add(2 * time.Second)
	if got := d.Name(8, 0); got != "/dev/sdb" {
		t.Errorf("re-read 8:0 = %q", got)
	}
	if got := d.Name(259, 1); got != "/dev/nvme0n1p1" {
		t.Errorf("re-read 259:1 = %q", got)
	}
	// A clock that went back re-reads too.
	writeUevent(t, sys, "8:0", "DEVNAME=vda\n")
	now = now.Add(-time.Hour)
	if got := d.Name(8, 0); got != "/dev/vda" {
		t.Errorf("after the clock went back 8:0 = %q", got)
	}
}
