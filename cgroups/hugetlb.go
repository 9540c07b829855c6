package cgroups

import (
	"fmt"
	"maps"
	"slices"
)

// HugePageSizeName is the name the hugetlb controller gives the huge pages
// of size bytes in its file names (hugetlb.<name>.limit_in_bytes on v1,
// hugetlb.<name>.max on v2) and the CRI HugepageLimit.page_size: the size
// in the largest binary unit that divides it, with the unit B, KB, MB, GB,
// TB or PB (2 MiB → "2MB", 1 GiB → "1GB", 64 KiB → "64KB").
func HugePageSizeName(size int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", size, units[i])
}

// hugePageLimits are the hugetlb limits of a cgroup on a node with huge
// pages of sizes (bytes): want's amount for each size, 0 for a size want
// does not name (as kubelet: a pod may use only the huge pages it asked
// for); nil without sizes (no hugetlb file is written).
func hugePageLimits(sizes []int64, want map[int64]int64) map[int64]int64 {
	if len(sizes) == 0 {
		return nil
	}
	out := make(map[int64]int64, len(sizes))
	for _, s := range sizes {
		out[s] = want[s]
	}
	return out
}

// widenHugePages is the larger limit of a and b per page size (b's when
// a has none).
func widenHugePages(a, b map[int64]int64) map[int64]int64 {
	if b == nil {
		return nil
	}
	out := maps.Clone(b)
	for s, v := range a {
		if cur, ok := out[s]; ok {
			out[s] = max(cur, v)
		}
	}
	return out
}

// sortedSizes are the page sizes of limits, ascending.
func sortedSizes(limits map[int64]int64) []int64 {
	return slices.Sorted(maps.Keys(limits))
}
