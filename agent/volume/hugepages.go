package volume

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// isHugePagesMedium tells the emptyDir media on huge pages: HugePages and
// HugePages-<size>.
func isHugePagesMedium(m v1.StorageMedium) bool {
	return m == v1.StorageMediumHugePages || strings.HasPrefix(string(m), string(v1.StorageMediumHugePagesPrefix))
}

// HugePagesPageSize is the pagesize option of the hugetlbfs an emptyDir of
// medium mounts for pod ("2Mi"), kubelet's choice with its messages:
// medium HugePages-<size> takes that size, which some container (init
// containers included) must request; medium HugePages takes the one size
// the containers request, and refuses several.
func HugePagesPageSize(pod *v1.Pod, medium v1.StorageMedium) (string, error) {
	var want resource.Quantity
	if medium != v1.StorageMediumHugePages {
		s, ok := strings.CutPrefix(string(medium), string(v1.StorageMediumHugePagesPrefix))
		if !ok {
			return "", fmt.Errorf("medium: %v is not a hugepage medium", medium)
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return "", err
		}
		want = q
	}
	var found *resource.Quantity
	for _, c := range append(append([]v1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		for name := range c.Resources.Requests {
			s, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
			if !ok {
				continue
			}
			size, err := resource.ParseQuantity(s)
			if err != nil {
				return "", fmt.Errorf("invalid hugepage resource name %q: %w", name, err)
			}
			switch {
			case medium == v1.StorageMediumHugePages && found != nil && found.Cmp(size) != 0:
				return "", fmt.Errorf("medium: %s can't be used if container requests multiple huge page sizes", medium)
			case medium == v1.StorageMediumHugePages, size.Cmp(want) == 0:
				found = &size
			}
		}
	}
	if found == nil {
		return "", fmt.Errorf("medium %s: hugePages storage requested, but there is no resource request for huge pages", medium)
	}
	return found.String(), nil
}

// ensureHugetlbfs mounts a hugetlbfs of pod's page size for medium on dir
// unless one is there; mounted says it did.
func (m *Manager) ensureHugetlbfs(pod *v1.Pod, dir string, medium v1.StorageMedium) (mounted bool, err error) {
	size, err := HugePagesPageSize(pod, medium)
	if err != nil {
		return false, err
	}
	there, err := m.mnt.IsMountPoint(dir)
	if err != nil || there {
		return false, err
	}
	return true, m.mnt.MountHugetlbfs(dir, size)
}
