package bpf_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kernelet/kernelet/bpf"
)

// Watch OOM kills until the context ends. Each event names the victim and,
// where the attach mode can know them, its cgroups and memcg.
func ExampleOpenOOMTracer() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr, err := bpf.OpenOOMTracer(ctx, bpf.Options{})
	if errors.Is(err, bpf.ErrUnavailable) {
		log.Printf("no OOM tracing here (fall back to memory.events): %v", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	fmt.Println("attached with", tr.Mode())
	for ev := range tr.Events() { // closed when ctx ends
		fmt.Printf("%s OOM kill: pid %d (%s), cgroup %d", ev.Time.Format(time.RFC3339Nano), ev.Pid, ev.Comm, ev.CgroupID)
		if ev.Known.Has(bpf.FieldMemcgUsage) {
			fmt.Printf(", memcg %d of %d bytes", ev.MemcgUsageBytes, ev.MemcgLimitBytes)
		}
		fmt.Println()
	}
}

// Force a lower attach mode, as `kernelet trace --mode raw_tp` does.
func ExampleParseAttachMode() {
	mode, err := bpf.ParseAttachMode("raw_tp")
	if err != nil {
		log.Fatal(err)
	}
	tr, err := bpf.OpenExitTracer(context.Background(), bpf.Options{Mode: mode})
	if err != nil {
		log.Fatal(err) // no fallback when a mode is forced
	}
	defer tr.Close()
	ev := <-tr.Events()
	fmt.Printf("pid %d (%s) exited: code %d signal %d, peak RSS %d bytes\n", ev.Tgid, ev.Comm, ev.ExitCode, ev.Signal, ev.MaxRSSBytes)
}

// Report memcg reclaim stalls of at least a millisecond.
func ExampleOpenReclaimTracer() {
	tr, err := bpf.OpenReclaimTracer(context.Background(), bpf.Options{MinStall: time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	for ev := range tr.Events() {
		fmt.Printf("%s (pid %d) stalled %v reclaiming %d pages in memcg %d\n", ev.Comm, ev.Pid, ev.Duration, ev.NrReclaimed, ev.MemcgV1ID)
	}
}

// Follow cgroup creations and removals in every hierarchy.
func ExampleOpenCgroupTracer() {
	tr, err := bpf.OpenCgroupTracer(context.Background(), bpf.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	for ev := range tr.Events() {
		fmt.Printf("%v hierarchy %d: %s (id %d)\n", ev.Op, ev.HierarchyID, ev.Path, ev.ID)
	}
}

// Export the programs' own run time next to the agent's other metrics.
func ExampleNewCollector() {
	oom, err := bpf.OpenOOMTracer(context.Background(), bpf.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer oom.Close()
	c := bpf.NewCollector(oom)
	prometheus.MustRegister(c)
	// kernelet_bpf_program_run_count_total{program="oom_mark_victim"} ...
	// kernelet_bpf_program_run_seconds_total{program="oom_mark_victim"} ...
}
