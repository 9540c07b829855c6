package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/agent"
)

// The OOM section names the sources, the fallback that replaces eBPF and
// each recent kill with pid, comm, pod/container and scope.
func TestPrintOOM(t *testing.T) {
	at := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	var b strings.Builder
	printOOM(&b, &agent.OOMStatus{Sources: "oom_control+kmsg", Fallback: "eBPF forced off",
		CgroupTracer: "off (eBPF forced off): cgroup ids resolved by walking the hierarchy",
		Notes:        []string{"memory.events: not on cgroup v2"}, Total: 1,
		Recent: []agent.OOMKillRecord{{Time: at, Pid: 42, Comm: "hog", Namespace: "ns", Pod: "p", Container: "app",
			Scope: "container", Memcg: "/kubepods/podu/c", Sources: "kmsg", Latency: 8 * time.Millisecond}}})
	got := b.String()
	for _, want := range []string{
		"OOM kills:   via oom_control+kmsg (fallback; eBPF forced off)\n",
		"  cgroup ids: off (eBPF forced off)",
		"  not used: memory.events: not on cgroup v2\n",
		"  2026-11-25T07:00:00Z pid 42 (hog) ns/p/app scope=container memcg=/kubepods/podu/c via kmsg, event after 8ms\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
