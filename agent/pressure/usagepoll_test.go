package pressure

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

const pollMi = 1 << 20

func allocatableHard(q int64) eviction.Threshold {
	return eviction.Threshold{Signal: eviction.SignalAllocatableMemoryAvailable, Operator: eviction.OpLessThan,
		Value: eviction.Value{Quantity: resource.NewQuantity(q, resource.BinarySI)}}
}

func pollerStats(inactive int64) eviction.Stats {
	return eviction.Stats{Allocatable: &eviction.MemoryStats{Capacity: 512 * pollMi, InactiveFile: inactive}}
}

// The poller only exists on a cgroup v2 memory controller with an
// allocatableMemory.available threshold.
func TestNewUsagePoller(t *testing.T) {
	v2 := &cgroups.Hierarchies{Unified: &cgroups.Mount{Path: t.TempDir(), Root: "/", Version: 2}}
	v1 := &cgroups.Hierarchies{Unified: v2.Unified, V1: map[string]*cgroups.Mount{"memory": {Path: t.TempDir(), Root: "/", Version: 1}}}
	node := eviction.Threshold{Signal: eviction.SignalMemoryAvailable, Operator: eviction.OpLessThan,
		Value: eviction.Value{Quantity: resource.NewQuantity(100*pollMi, resource.BinarySI)}}
	if p := newUsagePoller(v2, "/kubepods.slice", []eviction.Threshold{node, allocatableHard(64 * pollMi)}); p == nil ||
		p.file != filepath.Join(v2.Unified.Path, "kubepods.slice", "memory.current") || len(p.thresholds) != 1 {
		t.Fatalf("v2: %+v", p)
	}
	if p := newUsagePoller(v1, "/kubepods", []eviction.Threshold{allocatableHard(64 * pollMi)}); p != nil {
		t.Errorf("v1 memory: %+v, want none (the memcg armer's)", p)
	}
	if p := newUsagePoller(v2, "/kubepods.slice", []eviction.Threshold{node}); p != nil {
		t.Errorf("no allocatableMemory.available threshold: %+v", p)
	}
}

// A crossing of a level either way wakes; moving within a band, and the
// read right after the levels moved, do not.
func TestUsagePollerSteps(t *testing.T) {
	p := &usagePoller{thresholds: []eviction.Threshold{allocatableHard(64 * pollMi)}}
	if _, crossed := p.step(500*pollMi, -1); crossed {
		t.Fatal("woke with no levels")
	}
	p.decided(context.Background(), pollerStats(10*pollMi)) // levels 394Mi and 458Mi
	last := -1
	for i, c := range []struct {
		usage uint64
		wake  bool
	}{
		{300 * pollMi, false}, // the read after the levels moved
		{390 * pollMi, false},
		{400 * pollMi, true}, // into the band: capacity − 2·64Mi + 10Mi
		{450 * pollMi, false},
		{460 * pollMi, true}, // the threshold: capacity − 64Mi + 10Mi
		{380 * pollMi, true}, // back below both
	} {
		var crossed bool
		last, crossed = p.step(c.usage, last)
		if crossed != c.wake {
			t.Fatalf("step %d (usage %dMi): woke %t, want %t", i, c.usage/pollMi, crossed, c.wake)
		}
	}
	// Less than RearmTolerance of page-cache movement leaves the levels.
	p.decided(context.Background(), pollerStats(10*pollMi+pollMi/2))
	if _, crossed := p.step(400*pollMi, last); !crossed {
		t.Fatal("levels moved for half a MiB: the crossing was lost")
	}
	// The page cache grew by 100Mi: the levels move up with it, and the
	// usage that was in the band is below it now without a wake.
	p.decided(context.Background(), pollerStats(110*pollMi))
	if _, crossed := p.step(400*pollMi, 1); crossed {
		t.Fatal("woke on the re-arm itself")
	}
}

// run reads the real file every usagePoll and wakes on its crossings.
func TestUsagePollerRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "memory.current")
	write := func(v int64) {
		if err := os.WriteFile(file, []byte(strconv.FormatInt(v, 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(300 * pollMi)
	p := &usagePoller{thresholds: []eviction.Threshold{allocatableHard(64 * pollMi)}, file: file}
	p.decided(context.Background(), pollerStats(0))
	ctx, cancel := context.WithCancel(context.Background())
	wakes := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() { p.run(ctx, func() { wakes <- struct{}{} }); close(done) }()
	time.Sleep(3 * usagePoll) // a few reads below the levels
	if len(wakes) != 0 {
		t.Fatalf("%d wakes below the levels", len(wakes))
	}
	write(420 * pollMi)
	select {
	case <-wakes:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after the usage entered the band")
	}
	cancel()
	<-done
	// kubepods gone: the poll ends by itself.
	os.Remove(file)
	done = make(chan struct{})
	go func() { p.run(context.Background(), func() {}); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the poll went on without its file")
	}
}
