package bench

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The image-heavy disk fill of the cgroup v2 node (issue 28's "an
// image-heavy disk fill"): every agent has kubelet's default hard
// nodefs.available<10% and imagefs.available<15% (one filesystem in the
// guest: the imagefs threshold is met first) and imageMinimumGCAge 1s
// (0 would mean kubelet's default, 2m). Before each run an unused image
// of pressureV2FillerMiB (a single layer of zeros, made in the guest once
// per boot and kept sparse) is imported into containerd's k8s.io
// namespace if image GC removed it: about twice its size on disk (the
// layer's blob in the content store and its unpacked snapshot), which an
// agent frees by image GC before it evicts. The agent is then restarted:
// kubelet and kernelet both take an image's age from when they first
// listed it, at their start and every 5 minutes after, so an image
// imported while they run is not old enough for the eviction's image GC
// until their next listing — on a real node unused images have been
// there for long.
// One pod then writes into its container's writable layer at the
// workload's rate until the filesystem has pressureV2DiskLeave MiB
// available and holds there — the writer stops by itself, so a run where
// nothing acts leaves the guest a margin instead of a full disk. The
// writer logs both moments with the guest's time: the available space
// first under the imagefs threshold (the crossing) and down to the margin
// ("ran out": the table's kernel OOM column for this row). An agent's stop
// counts when it came before the run-out.
const (
	pressureV2FillerMiB  = 300
	pressureV2DiskLeave  = 100
	pressureV2DiskWindow = 4 * time.Minute
	// pressureV2Settle is how long after a disk or PID run's end its
	// stops are still counted.
	pressureV2Settle    = 15 * time.Second
	pressureV2FillerRef = "docker.io/kernelet/filler:v1"
	// pressureV2FillerMake makes the filler image's docker-archive tar
	// once per boot, sparse: its layer is pressureV2FillerMiB of zeros.
	pressureV2FillerMake = `(set -e; d=/var/tmp/filler; [ -s $d/filler.tar ] && exit 0; rm -rf $d; mkdir -p $d/l; ` +
		`truncate -s %dM $d/l/blob; tar -C $d/l -cf - blob | cp --sparse=always /dev/stdin $d/layer.tar; rm -rf $d/l; ` +
		`sum=$(sha256sum < $d/layer.tar | cut -d" " -f1); ` +
		`printf '{"architecture":"amd64","os":"linux","config":{},"rootfs":{"type":"layers","diff_ids":["sha256:%%s"]}}' $sum > $d/config.json; ` +
		`printf '[{"Config":"config.json","RepoTags":["kernelet/filler:v1"],"Layers":["layer.tar"]}]' > $d/manifest.json; ` +
		`tar -C $d -cf - manifest.json config.json layer.tar | cp --sparse=always /dev/stdin $d/filler.tar; rm -f $d/layer.tar)`
	// pressureV2FillerImport imports it unless it is there.
	pressureV2FillerImport = `ctr -n k8s.io images ls -q | grep -qx ` + pressureV2FillerRef + ` || ` +
		`ctr -n k8s.io images import /var/tmp/filler/filler.tar >/dev/null`
)

// The writer's log lines (testbox write --mark/--leave), in the CRI log
// format.
var (
	writerMark  = regexp.MustCompile(`testbox write: available \d+ MiB < \d+ MiB at (\d+\.\d+)`)
	writerLeave = regexp.MustCompile(`testbox write: stopped: available \d+ MiB <= \d+ MiB \(--leave\) at (\d+\.\d+)`)
)

// parseWriterLog is the writer's crossing and run-out times (zero: not
// logged).
func parseWriterLog(log string) (cross, ranOut time.Time) {
	if m := writerMark.FindStringSubmatch(log); m != nil {
		cross, _ = guestTime(m[1])
	}
	if m := writerLeave.FindStringSubmatch(log); m != nil {
		ranOut, _ = guestTime(m[1])
	}
	return cross, ranOut
}

// diskSpace is the guest root filesystem's capacity and available space
// (statfs f_blocks and f_bavail, kubelet's capacity and available) in MiB.
func (g *pressureV2Node) diskSpace(b *testing.B) (capacity, avail int64) {
	b.Helper()
	v := g.guestInts(b, "statfs", `stat -f -c '%b %a %S' /var/lib/containerd`, 3)
	return v[0] * v[2] >> 20, v[1] * v[2] >> 20
}

// diskRunOnce runs disk fill w with the bystander, as runOnce runs the
// memory workloads.
func (g *pressureV2Node) diskRunOnce(b *testing.B, a *nodeAgent, w pressureWorkload, name string) (pressureRun, error) {
	b.Helper()
	a.waitConditionOff(b, v1.NodeDiskPressure)
	// Under TCG making and importing 300 MiB takes a while: not g.guest's 2 min.
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	out, err := g.Run(ctx, fmt.Sprintf(pressureV2FillerMake, pressureV2FillerMiB)+" && "+pressureV2FillerImport)
	cancel()
	if err != nil {
		b.Fatalf("the filler image: %v %s", err, out)
	}
	// The agent lists images at its start: the filler is old enough (1s)
	// by the crossing. The bystander's start below waits for it to run.
	g.guest(b, "systemctl restart "+pressureV2Unit)
	by := name + "-by"
	// From before the bystander: containerd's lines naming its sandbox and
	// container are needed to see it stopped.
	since := g.guest(b, `bash -c 'echo $EPOCHREALTIME'`)
	byPod, err := g.startBystander(b, a, by)
	if err != nil {
		return pressureRun{}, err
	}
	capacity, avail := g.diskSpace(b)
	mark := (capacity*15 + 99) / 100 // imagefs.available<15%
	b.Logf("%s %s: disk %d MiB, %d MiB available, the unused filler image in; crossing under %d MiB, run-out at %d MiB",
		a.name, name, capacity, avail, mark, pressureV2DiskLeave)
	args := expandArgs(w.pods[0], "{mark}", strconv.FormatInt(mark, 10), "{leave}", strconv.Itoa(pressureV2DiskLeave))
	writer := a.createBenchPod(b, name+"-0", args, nil)
	started := func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending }
	if err := a.podWithin(b.Context(), writer.Name, pressureV2PodTimeout, started); err != nil {
		a.deleteEvictionPod(b, writer.Name)
		a.deleteEvictionPod(b, by)
		return pressureRun{}, err
	}
	logPath := "/var/log/pods/" + g.ns + "_" + writer.Name + "_" + string(writer.UID) + "/app/0.log"
	var log string
	deadline := time.Now().Add(cmp.Or(w.window, pressureV2DiskWindow))
	for time.Now().Before(deadline) {
		// The longest read: the log goes with the container.
		if l := g.guest(b, "cat "+logPath+" 2>/dev/null; true"); len(l) > len(log) {
			log = l
		}
		if _, out := parseWriterLog(log); !out.IsZero() {
			break
		}
		if p, err := g.admin.CoreV1().Pods(g.ns).Get(b.Context(), writer.Name, metaGet); err == nil && (p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded) {
			break
		}
		time.Sleep(time.Second)
	}
	// An agent may go on evicting after the writer (the bystander): give
	// it a kubelet loop and a half before judging.
	time.Sleep(pressureV2Settle)
	stops, _ := g.stops(b, since)
	byEnd, err := g.admin.CoreV1().Pods(g.ns).Get(b.Context(), by, metaGet)
	var r pressureRun
	r.bystander = !stops[string(byPod.UID)].IsZero() || (err == nil && byEnd.Status.Phase != v1.PodRunning)
	images := g.guest(b, "ctr -n k8s.io images ls -q | grep -cx "+pressureV2FillerRef+" || true")
	b.Logf("%s %s: the agent's reclaim and eviction lines:\n%s", a.name, name, g.guest(b, `journalctl --no-pager -o short-unix -u `+pressureV2Unit+` --since @`+since+
		` | grep -iE 'reclaim|unused images|Removing image|image garbage|evict|imagefs|nodefs' | cut -c1-400 | head -30 || true`))
	a.deleteEvictionPod(b, writer.Name)
	a.deleteEvictionPod(b, by)
	g.waitDiskBack(b, a, mark+pressureV2FillerMiB)
	time.Sleep(pressureV2Transition + 2*time.Second)
	cross, ranOut := parseWriterLog(log)
	r.crossed, r.oom = !cross.IsZero(), !ranOut.IsZero()
	if stop := stops[string(writer.UID)]; !stop.IsZero() && (ranOut.IsZero() || stop.Before(ranOut)) {
		r.stops = 1
		if r.crossed {
			r.latency = stop.Sub(cross)
		}
	}
	b.Logf("%s %s: filler image still there after the run: %s", a.name, name, map[string]string{"0": "no (image GC removed it)", "1": "yes"}[images])
	return r, nil
}

// waitDiskBack waits until the guest's root filesystem has more than
// want MiB available again (the writer's container removed).
func (g *pressureV2Node) waitDiskBack(b *testing.B, a *nodeAgent, want int64) {
	b.Helper()
	a.wait(b, 3*time.Minute, "the disk's space back", func() (bool, error) {
		_, avail := g.diskSpace(b)
		return avail > want, fmt.Errorf("%d MiB available, want > %d", avail, want)
	})
}

func TestParseWriterLog(t *testing.T) {
	log := "2026-11-30T11:00:00.1Z stdout F testbox write: pid=1 mib=100000 file=/fill sync=false rate=50\n" +
		"2026-11-30T11:00:15.1Z stdout F testbox write: available 598 MiB < 600 MiB at 1795978400.250000\n" +
		"2026-11-30T11:00:40.1Z stdout F testbox write: stopped: available 100 MiB <= 100 MiB (--leave) at 1795978425.500000\n"
	cross, out := parseWriterLog(log)
	if cross.Unix() != 1795978400 || cross.Nanosecond() != 250000000 {
		t.Errorf("crossing %v, want 1795978400.25", cross)
	}
	if out.Unix() != 1795978425 || out.Nanosecond() != 500000000 {
		t.Errorf("run-out %v, want 1795978425.5", out)
	}
	if c, o := parseWriterLog(log[:strings.Index(log, "\n")+1]); !c.IsZero() || !o.IsZero() {
		t.Errorf("a log without either line gave %v %v", c, o)
	}
}
