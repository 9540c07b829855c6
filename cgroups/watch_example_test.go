package cgroups_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kernelet/kernelet/cgroups"
)

// WatchOOM picks the host's OOM notification for a cgroup: the v1
// memory.oom_control eventfd on legacy and hybrid hosts, memory.events on
// cgroup v2. Events are hints: re-read the cgroup's counters on each.
func ExampleWatchOOM() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := cgroups.Discover()
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := cgroups.WatchOOM(ctx, h, "/kubepods/burstable/pod1234")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	for ev := range w.Events() {
		fmt.Printf("OOM in %s (from %s, oom_kill now %d)\n", ev.Cgroup, ev.Source, ev.OOMKills)
	}
	if err := w.Err(); errors.Is(err, cgroups.ErrCgroupRemoved) {
		fmt.Println("cgroup removed")
	}
}

// A PSI trigger on a cgroup's memory pressure. Without CAP_SYS_RESOURCE
// the kernel only takes windows that are multiples of 2 s; the watcher
// then falls back and says so.
func ExampleWatchPressure() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := cgroups.Discover()
	if err != nil {
		fmt.Println(err)
		return
	}
	file, err := cgroups.PressureFile(h, "/kubepods", "memory")
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := cgroups.WatchPressure(ctx, file, cgroups.PressureTrigger{
		Kind: cgroups.TriggerSome, Stall: 150 * time.Millisecond, Window: time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	if w.FellBack() {
		fmt.Printf("trigger %q refused, using %q\n", w.Requested(), w.Effective())
	}
	for ev := range w.Events() {
		fmt.Printf("%s: tasks stalled ≥ %v within %v\n", ev.File, ev.Trigger.Stall, ev.Trigger.Window)
	}
}
