package pressure

import (
	"context"
	"os"
	"strings"

	"k8s.io/klog/v2"
)

// asyncSwap returns the active swap devices of procSwaps (the text of
// /proc/swaps) that are written back asynchronously: every one but zram's
// (a block device the kernel writes synchronously). An anon page swapped
// out to one of them stays in memory as swap cache until its write
// completes and a later reclaim pass frees it; when the cgroup's
// memory.swap.current has reached its memory.swap.max by then, that pass
// never comes (its anon pages are no longer scanned), so part of each
// pod's swap allowance holds memory that is also on disk (docs/eviction.md).
func asyncSwap(procSwaps string) []string {
	var out []string
	for i, line := range strings.Split(procSwaps, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 2 {
			continue // the header, blank lines
		}
		if !strings.HasPrefix(f[0], "/dev/zram") {
			out = append(out, f[0])
		}
	}
	return out
}

// adviseSwap logs, once at start when the throttler is on, the swap
// devices that make it hold fewer pods at once: written back
// asynchronously, with zswap (which stores pages synchronously ahead of
// the device) off.
func adviseSwap(ctx context.Context, procSwaps, zswapEnabled string) {
	devs := asyncSwap(procSwaps)
	if len(devs) == 0 || strings.TrimSpace(zswapEnabled) == "Y" {
		return
	}
	klog.FromContext(ctx).Info("Memory throttle: swap is written back asynchronously; what a throttled pod swaps out stays in memory as swap cache until the write completes, and for good once the container's memory.swap.max is reached: fewer pods can be held at once than with zram or zswap", "devices", devs)
}

// readAdviseSwap reads /proc/swaps and zswap's switch for adviseSwap.
func readAdviseSwap(ctx context.Context) {
	swaps, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return
	}
	zswap, _ := os.ReadFile("/sys/module/zswap/parameters/enabled") // absent: no zswap in this kernel
	adviseSwap(ctx, string(swaps), string(zswap))
}
