package bench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The fork storm of the cgroup v2 node (issue 28's "fork storm against
// pid.available"): every agent has a hard pid.available<pressureV2PIDThreshold;
// for the run the guest's kernel.threads-max is lowered to
// pressureV2PIDMax once the storm's container runs (threads-max rather
// than pid_max: it caps the count of tasks exactly, where a lowered
// pid_max leaves only the PIDs from 300 up to it after the wrap, which
// pid.available does not know), and one pod starts children (busybox sleep) at the workload's rate until
// the node has pressureV2PIDMargin PIDs left — the storm stops there by
// itself, so a run where no agent acts leaves the guest a margin to work
// with instead of a machine that can no longer fork (Go programs such as
// containerd and the agents abort when they cannot start a thread).
// "Ran out" (the table's kernel OOM column for this row) is the guest's
// poll seeing the free PIDs down to that margin; the crossing is the same
// poll seeing them under the threshold. The poll reads /proc/loadavg's
// thread count (what sysinfo's procs, kubelet's pid.available input,
// counts) every pressureV2Poll, in bash without a fork.
const (
	// pressureV2Transition is the agents' evictionPressureTransitionPeriod.
	pressureV2Transition   = 10 * time.Second
	pressureV2PIDMax       = 1536
	pressureV2PIDThreshold = 400
	pressureV2PIDMargin    = 100
)

// forkRunOnce runs fork storm w with the bystander, as runOnce runs the
// memory workloads.
func (g *pressureV2Node) forkRunOnce(b *testing.B, a *nodeAgent, w pressureWorkload, name string) (pressureRun, error) {
	b.Helper()
	// The last run's storm: the agent keeps its PIDPressure (and rejects
	// new pods) for the transition period after its last observation,
	// which its Node may not show yet.
	a.waitConditionOff(b, v1.NodePIDPressure)
	by := name + "-by"
	// From before the bystander: containerd's lines naming its sandbox and
	// container are needed to see it stopped.
	since := g.guest(b, `bash -c 'echo $EPOCHREALTIME'`)
	byPod, err := g.startBystander(b, a, by)
	if err != nil {
		return pressureRun{}, err
	}
	limit, n := g.planPIDs(b)
	defer g.guest(b, "sysctl -qw kernel.threads-max="+strconv.Itoa(g.threadsMax))
	// The poll writes its file at each change (echo is a builtin: no fork)
	// and ends once the PIDs ran out, or when killed after the run.
	poller := g.guest(b, fmt.Sprintf(`bash -c 'exec 3<>/run/pressure.fifo; lim=%d; r=-; c=-; e=-; : > /run/pressure.pids; `+
		`while :; do read _ _ _ rt _ < /proc/loadavg; free=$((lim-${rt#*/})); `+
		`if [ $r = - ] && [ $free -lt %d ]; then r=$EPOCHREALTIME; echo "$r $c $e" > /run/pressure.pids; fi; `+
		`if [ $c = - ] && [ $free -lt %d ]; then c=$EPOCHREALTIME; echo "$r $c $e" > /run/pressure.pids; fi; `+
		`if [ $free -le %d ]; then e=$EPOCHREALTIME; echo "$r $c $e" > /run/pressure.pids; exit 0; fi; `+
		`read -t %g -u 3; done' >/dev/null 2>&1 </dev/null & echo $!`,
		limit, pressureV2PIDThreshold+200, pressureV2PIDThreshold, pressureV2PIDMargin, pressureV2Poll.Seconds()))
	args := expandArgs(w.pods[0], "{n}", strconv.Itoa(n))
	storm := a.createBenchPod(b, name+"-0", args, nil)
	started := func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending }
	if err := a.podWithin(b.Context(), storm.Name, pressureV2PodTimeout, started); err != nil {
		g.guest(b, "kill "+poller+" 2>/dev/null; true")
		a.deleteEvictionPod(b, storm.Name)
		a.deleteEvictionPod(b, by)
		return pressureRun{}, err
	}
	// Only now, the storm's container running: systemd resolves a new
	// unit's default TasksMax (15 % of the task limit) when it creates it,
	// and the container's scope made under the lowered limit could hold
	// only ~230 tasks.
	g.guest(b, "sysctl -qw kernel.threads-max="+strconv.Itoa(pressureV2PIDMax))
	a.waitPressureEnd(b, w, []string{storm.Name})
	if p, err := g.admin.CoreV1().Pods(g.ns).Get(b.Context(), storm.Name, metaGet); err == nil && p.Status.Phase != v1.PodRunning {
		b.Logf("%s %s: the storm's pod ended %s (%s %q), containers %s; its log: %s", a.name, name, p.Status.Phase, p.Status.Reason, p.Status.Message,
			terminations(p), g.guest(b, "tail -c 600 /var/log/pods/"+g.ns+"_"+storm.Name+"_"+string(storm.UID)+"/app/0.log 2>&1; true"))
	}
	times := g.guest(b, "kill "+poller+" 2>/dev/null; cat /run/pressure.pids; rm -f /run/pressure.pids")
	time.Sleep(pressureV2Settle)
	stops, _ := g.stops(b, since)
	byEnd, err := g.admin.CoreV1().Pods(g.ns).Get(b.Context(), by, metaGet)
	var r pressureRun
	r.bystander = !stops[string(byPod.UID)].IsZero() || (err == nil && byEnd.Status.Phase != v1.PodRunning)
	a.deleteEvictionPod(b, storm.Name)
	a.deleteEvictionPod(b, by)
	g.waitPIDsBack(b, a, limit)
	time.Sleep(pressureV2Transition + 2*time.Second)
	f := strings.Fields(times)
	var ramp, cross, ranOut time.Time
	if len(f) == 3 { // "-" for what did not happen: guestTime says not ok
		ramp, _ = guestTime(f[0])
		cross, r.crossed = guestTime(f[1])
		ranOut, _ = guestTime(f[2])
	}
	r.oom = !ranOut.IsZero()
	if stop := stops[string(storm.UID)]; !stop.IsZero() && (ranOut.IsZero() || stop.Before(ranOut)) {
		r.stops = 1
		if r.crossed {
			r.latency = stop.Sub(cross)
		}
	}
	if !ramp.IsZero() && cross.After(ramp) {
		b.Logf("%s %s: %d children asked for; the storm ran at %.0f/s near the threshold (200 PIDs in %v)", a.name, name, n, 200/cross.Sub(ramp).Seconds(), cross.Sub(ramp).Round(time.Millisecond))
	}
	return r, nil
}

// startBystander starts the run's bystander pod and waits until it runs.
func (g *pressureV2Node) startBystander(b *testing.B, a *nodeAgent, name string) (*v1.Pod, error) {
	b.Helper()
	g.waitBelowHalf(b, a)
	p := a.createBenchPod(b, name, []string{"alloc", "--mib", "32", "--hold"}, nil)
	if err := a.podWithin(b.Context(), name, pressureV2PodTimeout, func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending }); err != nil {
		a.deleteEvictionPod(b, name)
		return nil, err
	}
	return p, nil
}

// planPIDs returns the node's PID limit for the run (min(pid_max, the
// threads-max it will get)) and the storm's children: the free PIDs less
// pressureV2PIDMargin.
func (g *pressureV2Node) planPIDs(b *testing.B) (limit, n int) {
	b.Helper()
	v := g.guestInts(b, "PIDs", `cat /proc/sys/kernel/pid_max; awk '{split($4, t, "/"); print t[2]}' /proc/loadavg`, 2)
	limit = min(pressureV2PIDMax, int(v[0]))
	n = limit - pressureV2PIDMargin - int(v[1])
	if n <= 2*pressureV2PIDThreshold {
		b.Fatalf("guest PIDs: limit %d with %d threads running leaves no room for a storm past the threshold", limit, v[1])
	}
	return limit, n
}

// waitPIDsBack waits until the node's free PIDs are over twice the
// threshold again (the storm's children gone).
func (g *pressureV2Node) waitPIDsBack(b *testing.B, a *nodeAgent, limit int) {
	b.Helper()
	a.wait(b, 2*time.Minute, "the storm's PIDs freed", func() (bool, error) {
		out, err := g.Run(b.Context(), `awk '{split($4, t, "/"); print t[2]}' /proc/loadavg`)
		used, perr := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || perr != nil {
			return false, fmt.Errorf("%q: %v", out, err)
		}
		return limit-used > 2*pressureV2PIDThreshold, fmt.Errorf("%d threads of %d", used, limit)
	})
}
