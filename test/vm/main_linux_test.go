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
	size := mib << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mmap %d MiB: %v\n", mib, err)
		return 2
	}
	page := os.Getpagesize()
	rate, _ := strconv.ParseFloat(os.Getenv(childAllocRateEnv), 64)
	for i := 0; i < size; i += page {
		mem[i] = 1
		if rate > 0 && (i+page)%(1<<20) == 0 {
			time.Sleep(time.Duration(float64(time.Second) / rate)) // pacing the workload, not synchronisation
		}
	}
	fmt.Printf("allocated and touched %d MiB without being killed\n", mib)
	if rate > 0 {
		select {} // hold it until killed
	}
	return 0
}
