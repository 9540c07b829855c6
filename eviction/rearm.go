package eviction

// UsageThresholds are the memory usages at which a v1 memcg usage
// notification (memory.usage_in_bytes eventfd) should wake the manager for
// a threshold of q bytes on a cgroup of capacity bytes whose inactive page
// cache is inactiveFile: usage counts the inactive file pages the working
// set leaves out, so the working set reaches capacity − q when usage
// reaches capacity − q + inactiveFile (kubelet arms its notifier the same
// way); an earlier warning at capacity − 2q + inactiveFile lets the manager
// look closer before the threshold. Values that are not positive are left
// out. As inactiveFile moves, the thresholds must be re-armed.
func UsageThresholds(capacity, q, inactiveFile int64) []uint64 {
	var out []uint64
	for _, v := range []int64{capacity - q + inactiveFile, capacity - 2*q + inactiveFile} {
		if v > 0 && (len(out) == 0 || uint64(v) != out[len(out)-1]) {
			out = append(out, uint64(v))
		}
	}
	return out
}

// RearmTolerance is how far an armed usage threshold may be from where it
// should be before it is re-armed: re-arming on every page of page-cache
// movement would only churn eventfds.
const RearmTolerance = 1 << 20

// NeedsRearm reports whether the armed thresholds differ from want by
// more than RearmTolerance (or in number).
func NeedsRearm(armed, want []uint64) bool {
	if len(armed) != len(want) {
		return true
	}
	for i := range armed {
		d := int64(armed[i]) - int64(want[i])
		if d > RearmTolerance || d < -RearmTolerance {
			return true
		}
	}
	return false
}
