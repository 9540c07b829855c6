package cgroups

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// deviceRecheck is how long a looked-up device name is kept before the
// next lookup of its number reads sysfs again: block devices rarely
// change, but a number can be reused (hot-plug, device-mapper) or appear
// after its first lookup.
const deviceRecheck = time.Minute

// BlockDevices names block devices by number as cAdvisor labels their I/O:
// "/dev/" + the DEVNAME of /sys/dev/block/MAJ:MIN/uevent, "" for a number
// with no such device. Names are cached; a number not in the cache, or
// looked up more than a minute ago, is looked up again. It is safe for
// concurrent use.
type BlockDevices struct {
	dir string // the sysfs directory dev/block
	now func() time.Time

	mu    sync.RWMutex
	names map[devNumber]deviceName
}

type devNumber struct{ major, minor uint32 }

type deviceName struct {
	name string
	at   time.Time // when looked up
}

// NewBlockDevices returns the device names of the sysfs mounted at sysRoot
// (normally /sys).
func NewBlockDevices(sysRoot string) *BlockDevices {
	return &BlockDevices{dir: strings.TrimSuffix(sysRoot, "/") + "/dev/block", now: time.Now,
		names: map[devNumber]deviceName{}}
}

// Name returns the name of block device major:minor ("/dev/sda"), or ""
// when sysfs has no such device or it has no DEVNAME.
func (d *BlockDevices) Name(major, minor uint32) string {
	k := devNumber{major, minor}
	now := d.now()
	d.mu.RLock()
	e, ok := d.names[k]
	d.mu.RUnlock()
	if ok && now.Sub(e.at) < deviceRecheck && !now.Before(e.at) {
		return e.name
	}
	e = deviceName{at: now}
	b, err := os.ReadFile(d.dir + "/" + strconv.FormatUint(uint64(major), 10) + ":" +
		strconv.FormatUint(uint64(minor), 10) + "/uevent")
	if err == nil {
		if n := ParseUeventDevname(b); len(n) > 0 {
			e.name = "/dev/" + string(n)
		}
	}
	d.mu.Lock()
	d.names[k] = e
	d.mu.Unlock()
	return e.name
}

// ParseUeventDevname returns the value of DEVNAME= in a sysfs uevent file
// ("KEY=VALUE" lines), nil when there is none.
func ParseUeventDevname(b []byte) []byte {
	for len(b) > 0 {
		var l []byte
		l, b = nextLine(b)
		if v, ok := bytes.CutPrefix(l, []byte("DEVNAME=")); ok {
			return bytes.TrimRight(v, " \t\r")
		}
	}
	return nil
}
