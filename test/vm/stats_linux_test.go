//go:build vmtest

package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/cgroups"
)

// TestStatsSweepV2: on cgroup v2, a pod cgroup with a container cgroup
// whose process the memcg OOM killer killed: the stats sweep counts the
// kill from the container's memory.events (container_oom_events_total 1)
// and serves its working set, and the Summary API has the pod's PSI.
func TestStatsSweepV2(t *testing.T) {
	pod := newCgroup(t, "statspod")
	writeFile(t, filepath.Join(pod, "cgroup.subtree_control"), "+memory +cpu +io +pids")
	ctr := filepath.Join(pod, "ctr")
	if err := os.Mkdir(ctr, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeCgroup(ctr); err != nil {
			t.Errorf("remove cgroup %s: %v", ctr, err)
		}
	})
	// The limit is set before any process joins.
	writeFile(t, filepath.Join(ctr, "memory.max"), strconv.Itoa(32<<20))
	if _, err := os.Stat(filepath.Join(ctr, "memory.swap.max")); err == nil {
		writeFile(t, filepath.Join(ctr, "memory.swap.max"), "0")
	}
	fd, err := syscall.Open(ctr, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), childAllocEnv+"=128")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Run(); err == nil || ctx.Err() != nil {
		t.Fatalf("child allocating 128 MiB under 32 MiB: %v (want killed)", err)
	}

	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		t.Fatal(err)
	}
	podCg := "/" + filepath.Base(pod)
	inv := func(context.Context) []stats.Pod {
		return []stats.Pod{{Namespace: "ns", Name: "p", UID: "u", Cgroup: podCg, StartTime: time.Now(),
			Containers: []stats.Container{{Name: "app", ID: "ctr", Image: "img", Running: true, StartTime: time.Now()}}}}
	}
	c, err := stats.NewCollector(stats.Config{Reader: r, Inventory: inv, NodeName: "vm", RootDir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 1 || !s.Pods[0].Found || len(s.Pods[0].Containers) != 1 || !s.Pods[0].Containers[0].Found {
		t.Fatalf("sweep: %+v", s.Pods)
	}
	cs := s.Pods[0].Containers[0]
	if cs.OOMEvents != 1 {
		t.Errorf("OOM events = %d, want 1 (memory.events oom_kill %v)", cs.OOMEvents, cs.Stats.Memory.Events.OOMKill)
	}
	want := `
# HELP container_oom_events_total Count of out of memory events observed for the container (the kernel's OOM kill counter of each instance's cgroup, or the runtime's OOMKilled when the cgroup was gone first).
# TYPE container_oom_events_total counter
container_oom_events_total{container="",id="` + podCg + `",image="",name="",namespace="ns",pod="p"} 1
container_oom_events_total{container="app",id="` + podCg + `/ctr",image="img",name="ctr",namespace="ns",pod="p"} 1
`
	if err := testutil.CollectAndCompare(stats.NewCadvisorCollector(c), strings.NewReader(want), "container_oom_events_total"); err != nil {
		t.Error(err)
	}
	sum := stats.Summary(s, false)
	if len(sum.Pods) != 1 || sum.Pods[0].Memory.PSI == nil || sum.Pods[0].CPU.PSI == nil || sum.Pods[0].IO == nil ||
		len(sum.Pods[0].Containers) != 1 || sum.Pods[0].Containers[0].Memory.WorkingSetBytes == nil {
		t.Errorf("summary: %+v", sum.Pods)
	}
	fact(t, "stats.oom_events", strconv.FormatUint(cs.OOMEvents, 10))
	fact(t, "stats.peak", cs.Stats.Memory.PeakBytes.String())
}
