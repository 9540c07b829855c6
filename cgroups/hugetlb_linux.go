package cgroups

import (
	"fmt"
	"strconv"
)

// ensureHugetlb writes limits (bytes by page size) to cgroup's hugetlb
// files — hugetlb.<size>.limit_in_bytes on v1, hugetlb.<size>.max on v2
// (enabling the controller in the ancestors' cgroup.subtree_control) —
// where the Manager has a hugetlb hierarchy; nil limits write nothing.
// The directory exists: ensure created it in every hierarchy.
func (m *Manager) ensureHugetlb(cgroup string, limits map[int64]int64) error {
	mt := m.hugetlb
	if mt == nil || limits == nil {
		return nil
	}
	d, err := m.dir(mt, cgroup)
	if err != nil {
		return err
	}
	file := "hugetlb.%s.limit_in_bytes"
	if mt.Version == 2 {
		file = "hugetlb.%s.max"
		if err := enableControllers(mt.Path, d, []string{"hugetlb"}); err != nil {
			return err
		}
	}
	for _, size := range sortedSizes(limits) {
		name := fmt.Sprintf(file, HugePageSizeName(size))
		if err := writeCgroupFile(d, name, strconv.FormatInt(limits[size], 10)); err != nil {
			return fmt.Errorf("hugetlb: %w", err)
		}
	}
	return nil
}
