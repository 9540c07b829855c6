//go:build vmtest

package vm

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// childAllocEnv makes the test binary, re-executed as a child, allocate and
// touch that many MiB and exit instead of running tests.
const childAllocEnv = "KERNELET_VM_CHILD_ALLOC_MIB"

// childAllocRateEnv, when set, paces the child's allocation at that many
// MiB per second (and the child keeps its memory until killed).
const childAllocRateEnv = "KERNELET_VM_CHILD_ALLOC_RATE"

// childOOMScoreAdjEnv, when set, is the child's oom_score_adj, written
// before it allocates (1000: the global OOM killer's first victim).
const childOOMScoreAdjEnv = "KERNELET_VM_CHILD_OOM_SCORE_ADJ"

func TestMain(m *testing.M) {
	if v := os.Getenv(childAllocEnv); v != "" {
		os.Exit(allocChild(v))
	}
	os.Exit(m.Run())
}

// allocChild maps mib MiB of anonymous memory and writes to every page. In
// a cgroup whose memory.max is below that, the OOM killer kills it first.
func allocChild(v string) int {
	mib, err := strconv.Atoi(v)
	if err != nil || mib <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a positive number\n", childAllocEnv, v)
		return 2
	}
	if adj := os.Getenv(childOOMScoreAdjEnv); adj != "" {
		if err := os.WriteFile("/proc/self/oom_score_adj", []byte(adj), 0); err != nil {
			fmt.Fprintf(os.Stderr, "oom_score_adj %s: %v\n", adj, err)
			return 2
		}
	}
	// Mapped in 64 MiB pieces: the kernel's overcommit heuristic refuses
	// one mapping larger than the VM's memory (the global OOM test).
	page := os.Getpagesize()
	rate, _ := strconv.ParseFloat(os.Getenv(childAllocRateEnv), 64)
	for left := mib << 20; left > 0; {
		size := min(left, 64<<20)
		left -= size
		mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mmap %d MiB: %v\n", mib, err)
			return 2
		}
		for i := 0; i < size; i += page {
			mem[i] = 1
			if rate > 0 && (i+page)%(1<<20) == 0 {
				time.Sleep(time.Duration(float64(time.Second) / rate)) // pacing the workload, not synchronisation
			}
		}
	}
	fmt.Printf("allocated and touched %d MiB without being killed\n", mib)
	if rate > 0 {
		select {} // hold it until killed
	}
	return 0
}
